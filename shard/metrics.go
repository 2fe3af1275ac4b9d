package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The package's metrics, registered with controller-runtime's registry so
// the manager's /metrics serves them.
var (
	rangesHeld = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
		Name: "reconcilekit_shard_ranges_held",
		Help: "Ranges this replica holds and admits work in, by Member group.",
	}, []string{"group"})
	selectorSupport = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
		Name: "reconcilekit_shard_selector_support",
		Help: "What the API server does with a ShardSelector, as Detect found it: 1 for the support found (honoured, ignored, refused), 0 for the others, by list kind.",
	}, []string{"kind", "support"})
	eventsFiltered = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
		Name: "reconcilekit_shard_events_filtered_total",
		Help: "Events the in-process filter (Predicate) dropped because their object is in a range this replica does not hold: the work a server honouring ShardSelector would have spared.",
	})
)
