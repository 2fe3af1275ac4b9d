package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The package's metrics, registered with controller-runtime's registry so
// the manager's /metrics serves them (see the package documentation).
var (
	ensureTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_ensure_total",
		Help: "Calls of Ensure, EnsureMutate and EnsureApplied by object kind and operation: created, updated (a patch or apply was sent), unchanged (no drift: no write).",
	}, []string{"kind", "operation"})
	hotLoopsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_hot_loops_total",
		Help: "Writes a HotLoopDetector held back because the same fields kept drifting back, by object kind.",
	}, []string{"kind"})
	eventsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_events_total",
		Help: "Kubernetes events a Loop recorded on summary transitions, by type (Normal, Warning).",
	}, []string{"type"})
)

func init() {
	metrics.Registry.MustRegister(ensureTotal, hotLoopsTotal, eventsTotal)
}
