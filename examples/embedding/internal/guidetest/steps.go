package guidetest

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/examples/embedding/step0"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step1"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step2"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step3"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step4"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step5"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step6"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step7"
	"github.com/reconcilekit/reconcilekit/freshness"
)

// Steps are the guide's steps in order, each wired as its main.go would
// (the reconciler built from the manager's client and scheme), with the
// reconciler wrapped for the tests.
var Steps = []Step{{
	Package: "step0",
	Adopts:  "nothing: the scaffolded reconciler",
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step0.WebsiteReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Directory: directory}
		return r.Watches(mgr).Complete(wrap(r))
	},
}, {
	Package: "step1",
	Adopts:  "`errors`, `requeue.Policy`",
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step1.WebsiteReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Directory: directory}
		return r.Watches(mgr).Complete(wrap(r))
	},
}, {
	Package: "step2",
	Adopts:  "`status`",
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step2.WebsiteReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Directory: directory}
		return r.Watches(mgr).Complete(wrap(r))
	},
}, {
	Package: "step3",
	Adopts:  "`finalizer`",
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step3.WebsiteReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Directory: directory}
		return r.Watches(mgr).Complete(wrap(r))
	},
}, {
	Package: "step4",
	Adopts:  "`drift.Writer`",
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step4.WebsiteReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Directory: directory}
		return r.Watches(mgr).Complete(wrap(r))
	},
}, {
	Package:       "step5",
	Adopts:        "`reconcile.Loop`, `reconcile.Predicate`",
	RecordsEvents: true,
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		r := &step5.WebsiteReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Directory: directory,
			Recorder: mgr.GetEventRecorder("website")}
		loop, err := r.Loop()
		if err != nil {
			return err
		}
		return r.Watches(mgr).Complete(wrap(loop))
	},
}, {
	Package:       "step6",
	Adopts:        "`health`",
	RecordsEvents: true,
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		// main.go builds the manager with ctrl.Options{NewClient:
		// tracker.NewClient}; testenv built this one, so the Tracker
		// guards its client here, with its cache's informers alike.
		tracker := &freshness.Tracker{Informers: mgr.GetCache()}
		r := &step6.WebsiteReconciler{Client: tracker.Wrap(mgr.GetClient()), Scheme: mgr.GetScheme(), Directory: directory,
			Recorder: mgr.GetEventRecorder("website")}
		loop, err := r.Loop()
		if err != nil {
			return err
		}
		return r.Watches(mgr).Complete(wrap(loop))
	},
}, {
	Package:       "step7",
	Adopts:        "`applyset`",
	RecordsEvents: true,
	Wire: func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error {
		// As step6: the Tracker guards the client testenv built.
		tracker := &freshness.Tracker{Informers: mgr.GetCache()}
		r := &step7.WebsiteReconciler{Client: tracker.Wrap(mgr.GetClient()), Scheme: mgr.GetScheme(), Directory: directory,
			Recorder: mgr.GetEventRecorder("website")}
		loop, err := r.Loop()
		if err != nil {
			return err
		}
		return r.Watches(mgr).Complete(wrap(loop))
	},
}}
