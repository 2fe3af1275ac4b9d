package freshness

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// staleReadsTotal counts reads that found the cache behind this process's
// writes, registered with controller-runtime's registry so the manager's
// /metrics serves it.
var staleReadsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_stale_reads_total",
	Help: "Reads through a freshness-guarded client that found the cache older than this process's last write, by outcome: caught_up (the wait ended with a fresh read), gave_up (MaxWait passed, or no informers to wait on: a StaleError).",
}, []string{"outcome"})
