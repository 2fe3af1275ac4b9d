package requeue

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// decisionsTotal counts Policy decisions by class: how often reconciles end
// in each kind of failure (or none). It is registered with
// controller-runtime's registry, so the manager's /metrics serves it.
var decisionsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_reconcile_decisions_total",
	Help: "Reconciles decided by requeue.Policy, by the class of their error (none, transient, conflict, throttled, permanent, canceled) and whether the failure was reported on the object's conditions.",
}, []string{"class", "reported"})

func observeMetric(d Decision) {
	reported := "false"
	if d.Report {
		reported = "true"
	}
	decisionsTotal.WithLabelValues(d.Class.String(), reported).Inc()
}
