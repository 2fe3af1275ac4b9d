package drift

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
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

// detectors are the HotLoopDetectors that remember objects, found without
// keeping them alive, for the gauge below.
var detectors live.Set[HotLoopDetector]

// hotLoopEntries is the gauge reconcilekit_hot_loop_entries: the objects
// the HotLoopDetectors of the process remember, summed over them
// (docs/memory.md, "Bounds").
var hotLoopEntries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_hot_loop_entries",
		"Objects the drift.HotLoopDetectors of the process remember: those that drifted within Window or are held back, at most MaxObjects per detector.",
		nil, func() []int {
			n := 0
			detectors.Each(func(h *HotLoopDetector) { n += h.Len() })
			return []int{n}
		})
	metrics.Registry.MustRegister(c)
	return c
}()

// compareMemoEntries is the gauge reconcilekit_compare_memo_entries: the
// compiled managedFields package compare keeps (docs/memory.md, "Bounds").
// drift registers it, since compare imports no metrics library.
var compareMemoEntries = func() prometheus.GaugeFunc {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "reconcilekit_compare_memo_entries",
		Help: "Compiled managedFields that package compare keeps, by their content, so that comparing an object whose managedFields did not change compiles nothing: at most 512, shared by the process.",
	}, func() float64 {
		if managedfields.CompiledLen == nil {
			return 0
		}
		return float64(managedfields.CompiledLen())
	})
	metrics.Registry.MustRegister(g)
	return g
}()
