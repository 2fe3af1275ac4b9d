package ranges

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The package's metrics, registered with controller-runtime's registry so
// the manager's /metrics serves them (docs/metrics.md).
var (
	selectorSupport = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reconcilekit_shard_selector_support",
		Help: "What the API server does with a ShardSelector, as Detect found it: 1 for the support found (honoured, ignored, refused), 0 for the others, by list kind.",
	}, []string{"kind", "support"})
	eventsFiltered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reconcilekit_shard_events_filtered_total",
		Help: "Events the in-process filter (Predicate) dropped because their object is in a range this replica does not hold: the work a server honouring ShardSelector would have spared.",
	})
)

func init() {
	metrics.Registry.MustRegister(selectorSupport, eventsFiltered)
}
