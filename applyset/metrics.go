package applyset

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The package's metric, registered with controller-runtime's registry so
// the manager's /metrics serves it (docs/metrics.md in the module).
var driftCorrectedTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_drift_corrected_total",
	Help: "Children a Set patched back after another field manager changed fields it had written, by kind.",
}, []string{"kind"})
