package requeue

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// decisionsTotal counts Policy decisions by class: how often reconciles end
// in each kind of failure (or none). It is registered at init with
// controller-runtime's registry, so the manager's /metrics serves it
// (docs/metrics.md). pkg/metrics is already a dependency of pkg/reconcile,
// so importing it costs no package.
var decisionsTotal = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reconcilekit_reconcile_decisions_total",
		Help: "Reconciles decided by requeue.Policy, by the class of their error (none, transient, conflict, throttled, permanent, canceled) and whether the failure was reported on the object's conditions.",
	}, []string{"class", "reported"})
	metrics.Registry.MustRegister(c)
	return c
}()

func observeMetric(d Decision) {
	reported := "false"
	if d.Report {
		reported = "true"
	}
	decisionsTotal.WithLabelValues(d.Class.String(), reported).Inc()
}
