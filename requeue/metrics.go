package requeue

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
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

// policies and backoffs are the Policies and Backoffs that remember
// requests, found without keeping them alive, for the gauge below.
var (
	policies live.Set[Policy]
	backoffs live.Set[Backoff]
)

// entries is the gauge reconcilekit_requeue_entries: the requests the
// Policies and Backoffs of the process remember, summed over them, by map
// (docs/memory.md, "Bounds").
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_requeue_entries",
		"Requests the requeue.Policies and requeue.Backoffs of the process remember, by map: failing (a Policy's requests failing since, for ReportAfter), backoff (failures or conflicts in a row, of every Backoff, a Policy's own for conflicts included); each at most MaxTrackedRequests (MaxKeys) per value.",
		[]string{"failing", "backoff"}, func() []int {
			failing, backoff := 0, 0
			policies.Each(func(p *Policy) {
				p.mu.Lock()
				failing += p.failing.len()
				p.mu.Unlock()
			})
			backoffs.Each(func(b *Backoff) { backoff += b.Len() })
			return []int{failing, backoff}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
