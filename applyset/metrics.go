package applyset

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

// The package's metric, registered with controller-runtime's registry so
// the manager's /metrics serves it (docs/metrics.md in the module).
var driftCorrectedTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_drift_corrected_total",
	Help: "Children a Set patched back after another field manager changed fields it had written, by kind.",
}, []string{"kind"})

// waitIndexes are the wait indexes of the Sets that remember a waiting
// parent, found without keeping their Sets alive, for the gauge below.
var waitIndexes live.Set[waitIndex]

// entries is the gauge reconcilekit_applyset_entries: what the Sets of the
// process remember of their parents, summed over them, by map
// (docs/memory.md, "Bounds"). It is registered with controller-runtime's
// registry, so the manager's /metrics serves it (docs/metrics.md).
var entries = func() prometheus.Collector {
	c := live.NewGauge("reconcilekit_applyset_entries",
		"Parents the applyset.Sets of the process remember, by map: waiting (parents waiting for a kind to be installed, at most MaxWaiting per Set), due (those whose wake-ups after a CustomResourceDefinition's event are scheduled).",
		[]string{"waiting", "due"}, func() []int {
			var waiting, due int
			waitIndexes.Each(func(w *waitIndex) {
				n, d := w.sizes()
				waiting += n
				due += d
			})
			return []int{waiting, due}
		})
	metrics.Registry.MustRegister(c)
	return c
}()
