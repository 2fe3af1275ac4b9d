package shard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rangesHeld and fencedTotal are the package's metrics, registered with controller-runtime's
// registry so the manager's /metrics serves it (docs/metrics.md).
var rangesHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "reconcilekit_shard_ranges_held",
	Help: "Ranges this replica holds and admits work in, by Member group.",
}, []string{"group"})

// fencedTotal counts what a Member refused because a range's Lease was not
// confirmed (ErrFenced): work at Enter, a write at the transport (Fence), a
// check (Member.Check, as of an event), the terms ended with work
// cancelled, and a Leader's releases of a Lease another process holds.
var fencedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "reconcilekit_shard_fenced_total",
	Help: "What a Member refused because a range's Lease was not renewed within RenewDeadline, by Member group and where: enter, write, check, term (a term ended and its work's contexts were cancelled), release (a Leader's release of a Lease another process holds, not sent).",
}, []string{"group", "at"})

func init() {
	metrics.Registry.MustRegister(rangesHeld, fencedTotal)
}
