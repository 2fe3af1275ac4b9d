package diet

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// interners are the tables of the Intern transforms in use, found without
// keeping them alive, for the gauge below.
var interners live.Set[interner]

// internEntries is the gauge reconcilekit_diet_intern_entries: the
// distinct strings the Intern transforms of the process hold one copy of,
// summed over them (docs/memory.md, "Bounds"). It is registered with
// controller-runtime's registry, so the manager's /metrics serves it
// (docs/metrics.md).
var internEntries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_diet_intern_entries",
		"Distinct strings the diet.Intern transforms of the process keep one copy of while a cached object holds it: at most 4096 per transform (a table full of strings in use starts afresh).",
		nil, func() []int {
			n := 0
			interners.Each(func(in *interner) {
				in.mu.Lock()
				n += len(in.values)
				in.mu.Unlock()
			})
			return []int{n}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
