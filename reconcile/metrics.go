package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// eventsTotal counts the events a Loop records, on controller-runtime's
// registry so the manager's /metrics serves it (see the package
// documentation).
var eventsTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_events_total",
	Help: "Kubernetes events a Loop recorded on summary transitions, by type (Normal, Warning).",
}, []string{"type"})
