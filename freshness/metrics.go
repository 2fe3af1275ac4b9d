package freshness

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// staleReadsTotal counts reads that found the cache behind this process's
// writes, registered with controller-runtime's registry so the manager's
// /metrics serves it.
var staleReadsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_stale_reads_total",
	Help: "Reads through a freshness-guarded client that found the cache older than this process's last write, by outcome: caught_up (the wait ended with a fresh read), gave_up (MaxWait passed, or no informers to wait on: a StaleError).",
}, []string{"outcome"})

// trackers are the Trackers that remember something, found without keeping
// them alive, for the gauge below.
var trackers live.Set[Tracker]

// entries is the gauge reconcilekit_freshness_entries: what the Trackers of
// the process hold, summed over them, by map (docs/memory.md, "Bounds").
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_freshness_entries",
		"Entries held by the freshness.Trackers of the process, by map: writes (remembered writes of this process, at most MaxEntries per Tracker, each at most TTL), waiters (objects a read waits for), namespaces (namespaces an informer delivered events of and holds objects of, at most 4096 per informer).",
		[]string{"writes", "waiters", "namespaces"}, func() []int {
			var s sizes
			trackers.Each(func(t *Tracker) { s = s.plus(t.sizes()) })
			return []int{s.writes, s.waiters, s.namespaces}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
