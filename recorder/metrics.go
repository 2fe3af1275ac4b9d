package recorder

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// droppedEventsTotal counts the events every Recorder of the process
// dropped because its queue was full. It is registered at init with
// controller-runtime's registry, so the manager's /metrics serves it
// (docs/metrics.md).
var droppedEventsTotal = func() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reconcilekit_recorder_dropped_events_total",
		Help: "Events a recorder.Recorder dropped because its queue of events to send was full (1000 events, as client-go's broadcaster).",
	})
	metrics.Registry.MustRegister(c)
	return c
}()

// recorders are the Recorders built by New, found without keeping them
// alive, for the gauge below.
var recorders live.Set[Recorder]

// entries is the gauge reconcilekit_recorder_entries: the events the
// Recorders of the process remember to merge their repeats into series,
// summed over them, by map (docs/memory.md, "Bounds").
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_recorder_entries",
		"Events the recorder.Recorders of the process remember to merge their repeats into series, by map: singles (sent once), series (repeated); each at most 6 minutes after its last occurrence, and none about an object Forget was given.",
		[]string{"singles", "series"}, func() []int {
			singles, series := 0, 0
			recorders.Each(func(r *Recorder) {
				s, n := r.sizes()
				singles += s
				series += n
			})
			return []int{singles, series}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
