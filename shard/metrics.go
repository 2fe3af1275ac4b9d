package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rangesHeld is the package's metric, registered with controller-runtime's
// registry so the manager's /metrics serves it (docs/metrics.md).
var rangesHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "reconcilekit_shard_ranges_held",
	Help: "Ranges this replica holds and admits work in, by Member group.",
}, []string{"group"})

func init() {
	metrics.Registry.MustRegister(rangesHeld)
}
