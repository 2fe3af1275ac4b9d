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
var entries = func() *entriesCollector {
	c := &entriesCollector{desc: prometheus.NewDesc("reconcilekit_freshness_entries",
		"Entries held by the freshness.Trackers of the process, by map: writes (remembered writes of this process, at most MaxEntries per Tracker, each at most TTL), waiters (objects a read waits for), namespaces (namespaces an informer delivered events of, at most 4096 per informer).",
		[]string{"map"}, nil)}
	metrics.Registry.MustRegister(c)
	return c
}()

type entriesCollector struct{ desc *prometheus.Desc }

// Describe sends the gauge's description.
func (c *entriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the gauge's values.
func (c *entriesCollector) Collect(ch chan<- prometheus.Metric) {
	var s sizes
	trackers.Each(func(t *Tracker) { s = s.plus(t.sizes()) })
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.writes), "writes")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.waiters), "waiters")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.namespaces), "namespaces")
}
