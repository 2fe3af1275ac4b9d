package track

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// trackers are the Trackers that hold references, found without keeping
// them alive, for the gauge below.
var trackers live.Set[Tracker]

// entries is the gauge reconcilekit_track_entries: what the Trackers of the
// process hold, summed over them, by map (docs/memory.md, "Bounds"). It is
// registered with controller-runtime's registry, so the manager's /metrics
// serves it (docs/metrics.md).
var entries = func() *entriesCollector {
	c := &entriesCollector{desc: prometheus.NewDesc("reconcilekit_track_entries",
		"Entries held by the track.Trackers of the process, by map: references (objects some referrer reads, each with at most one copy), referrers (reconciled objects that read something).",
		[]string{"map"}, nil)}
	metrics.Registry.MustRegister(c)
	return c
}()

type entriesCollector struct{ desc *prometheus.Desc }

// Describe sends the gauge's description.
func (c *entriesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the gauge's values.
func (c *entriesCollector) Collect(ch chan<- prometheus.Metric) {
	var refs, referrers int
	trackers.Each(func(t *Tracker) {
		t.mu.Lock()
		refs += len(t.refs)
		referrers += len(t.referrers)
		t.mu.Unlock()
	})
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(refs), "references")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(referrers), "referrers")
}
