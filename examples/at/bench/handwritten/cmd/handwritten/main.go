// Command handwritten runs the hand-written At controller
// ([github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten]) as
// its own process, the way the At operator (examples/at) runs, so that the
// benchmark in examples/at/bench measures both as processes under the same
// conditions: the same flags, the same manager options (cache of every
// namespace, only the Pods of Ats, leader election with the same timings and
// release on cancel, metrics and probes), the same logger.
//
//	go run ./examples/at/bench/handwritten/cmd/handwritten --kubeconfig ~/.kube/config --workers 4
//
// It is a yardstick, not an operator to deploy.
package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/internal/yardstick"
)

func main() {
	yardstick.Command{
		Name:             "handwritten",
		LeaderElectionID: "handwritten-at.bench.reconcilekit.dev",
		DefaultWorkers:   4,
		Options:          func(o *ctrl.Options) { o.Cache.ByObject = handwritten.CacheByObject() },
		Setup: func(mgr ctrl.Manager, workers int) error {
			r := &handwritten.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
				Recorder: mgr.GetEventRecorder(handwritten.Name), Workers: workers}
			return r.SetupWithManager(mgr)
		},
	}.Main()
}
