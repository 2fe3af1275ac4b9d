package reconciletest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// BenchmarkWrappedGet measures what each wrapper adds to a Get on the fake
// client; "bare" is the baseline in the same run.
func BenchmarkWrappedGet(b *testing.B) {
	base := newFake(b, configMap("ns", "cm"))
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	noFaults := mustFaults(b, 1, rt.Rate(0))
	var counter rt.Counter
	clients := []struct {
		name string
		c    client.Client
	}{
		{"bare", base},
		{"counter", counter.Wrap(base)},
		{"faults-rate-0", noFaults.Wrap(base)},
		{"counter+faults", counter.Wrap(noFaults.Wrap(base))},
	}
	for _, tc := range clients {
		b.Run(tc.name, func(b *testing.B) {
			var cm corev1.ConfigMap
			for b.Loop() {
				if err := tc.c.Get(b.Context(), key, &cm); err != nil {
					b.Fatal(err)
				}
			}
		})
		counter.Reset()
	}
}
