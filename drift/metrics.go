package drift

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The package's metrics, registered with controller-runtime's registry so
// the manager's /metrics serves them (see the package documentation).
var (
	ensureTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_ensure_total",
		Help: "Calls of Ensure, EnsureMutate, EnsureApplied and EnsureApplyConfiguration by object kind and operation: created, updated (a patch or apply was sent), unchanged (no drift: no write).",
	}, []string{"kind", "operation"})
	hotLoopsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_hot_loops_total",
		Help: "Writes a HotLoopDetector held back because the same fields kept drifting back, by object kind.",
	}, []string{"kind"})
)

// observeEnsure counts one call of Ensure or its variants: its operation
// when it succeeded or a hot loop held its write back (failures are counted
// by requeue.Policy, by class). A Plan counts nothing.
func observeEnsure(c client.Client, obj client.Object, out Outcome, err error) {
	if _, plan := c.(planClient); plan {
		return // a plan is not a write (Writer.Plan)
	}
	held := errors.Is(err, ErrHotLoop)
	if err != nil && !held {
		return
	}
	kind := "unknown"
	if gvk, gerr := apiutil.GVKForObject(obj, c.Scheme()); gerr == nil {
		kind = gvk.Kind
	}
	if held {
		hotLoopsTotal.WithLabelValues(kind).Inc()
	}
	ensureTotal.WithLabelValues(kind, string(out.Operation)).Inc()
}
