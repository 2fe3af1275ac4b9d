package status

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// writesTotal counts what Snapshot.Write did, registered with
// controller-runtime's registry so the manager's /metrics serves it.
var writesTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_status_writes_total",
	Help: "Status writes by a status.Writer, by result: written (a patch the server accepted), unchanged (nothing to write: no request), conflict (a patch refused with 409 and retried after a re-read), failed.",
}, []string{"result"})
