// Command classic runs the classic At controller
// ([github.com/reconcilekit/reconcilekit/examples/at/bench/classic]) as its
// own process, the way the At operator (examples/at) runs, so that the
// benchmark in examples/at/bench measures both as processes under the same
// conditions: the same manager options (cache of every namespace, leader
// election with the same timings and release on cancel, metrics and probes),
// the same flags, the same logger.
//
//	go run ./examples/at/bench/classic/cmd/classic --kubeconfig ~/.kube/config --workers 4
//
// It is a yardstick, not an operator to deploy.
package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reconcilekit/reconcilekit/examples/at/bench/classic"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/internal/yardstick"
)

func main() {
	yardstick.Command{
		Name:             "classic",
		LeaderElectionID: "classic-at.bench.reconcilekit.dev",
		DefaultWorkers:   1,
		Setup: func(mgr ctrl.Manager, workers int) error {
			r := &classic.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Workers: workers}
			return r.SetupWithManager(mgr)
		},
	}.Main()
}
