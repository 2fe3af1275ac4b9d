package recorder

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
