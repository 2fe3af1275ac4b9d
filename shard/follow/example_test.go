package follow_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
)

// A sharded controller labels each Pod it creates with its owner's range,
// so that the replica holding that range caches the Pod.
func ExampleLabel() {
	m := shard.NewMember(fake.NewClientset().CoordinationV1(), "widgets-controller")
	m.RangeCount = 4
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner-run"}}
	if err := follow.Label(m, owner, pod); err != nil {
		panic(err)
	}
	fmt.Println(pod.Labels[follow.RangeLabel])
	// Output:
	// 3-of-4
}

// A replica's cache that holds the Widgets of the ranges its Member holds,
// and their Pods; the manager gets it through ctrl.Options{Cache: opts}.
func ExampleCacheOptions() {
	m := shard.NewMember(fake.NewClientset().CoordinationV1(), "widgets-controller")
	m.Namespace, m.Name, m.RangeCount = "widgets-system", "widgets", 8
	opts, err := follow.CacheOptions(cache.Options{}, m, follow.Kinds{
		Objects:  []client.Object{&corev1.ConfigMap{}}, // the controller's own kind (its For)
		Children: []client.Object{&corev1.Pod{}},       // what it creates, labelled with follow.Label
	})
	fmt.Println(err, opts.NewInformer != nil, len(opts.ByObject))
	// Output:
	// <nil> true 1
}
