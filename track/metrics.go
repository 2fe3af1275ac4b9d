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
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_track_entries",
		"Entries held by the track.Trackers of the process, by map: references (objects some referrer reads, each with at most one copy), referrers (reconciled objects that read something).",
		[]string{"references", "referrers"}, func() []int {
			var refs, referrers int
			trackers.Each(func(t *Tracker) {
				t.mu.Lock()
				refs += len(t.refs)
				referrers += len(t.referrers)
				t.mu.Unlock()
			})
			return []int{refs, referrers}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
