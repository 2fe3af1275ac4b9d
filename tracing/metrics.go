package tracing

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// tracers are the Tracers that remember an object, found without keeping
// them alive, for the gauge below.
var tracers live.Set[Tracer]

// entries is the gauge reconcilekit_tracing_entries: the objects the
// Tracers of the process remember, summed over them (docs/memory.md,
// "Bounds"). It is registered with controller-runtime's registry, so the
// manager's /metrics serves it (docs/metrics.md).
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_tracing_entries",
		"Objects the tracing.Tracers of the process remember (an edit's trace, a wait, links), at most MaxObjects per Tracer.",
		nil, func() []int {
			n := 0
			tracers.Each(func(t *Tracer) { n += t.Len() })
			return []int{n}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
