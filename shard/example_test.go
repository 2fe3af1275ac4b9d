package shard_test

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/reconcilekit/reconcilekit/shard"
)

// A Member is built with what its Lease writes need, the client and the
// operator's field owner; Validate names what else is missing.
func ExampleNewMember() {
	m := shard.NewMember(fake.NewClientset().CoordinationV1(), "widgets-controller")
	m.Namespace, m.Name = "widgets-system", "widgets"
	err := m.Validate()
	fmt.Println(errors.Is(err, shard.ErrInvalidMember))
	fmt.Println(err)

	m.RangeCount = 8
	fmt.Println(m.Validate())
	// Output:
	// true
	// shard: invalid Member: shard: 0 ranges: want between 1 and 1024
	// <nil>
}
