package reconcile

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// Predicate returns the event filter for the For() of a controller whose
// reconciler is a [Loop]:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(reconcile.Predicate())).
//		Owns(&appsv1.Deployment{}).
//		Complete(loop)
//
// It lets through what a Loop must act on: creation and deletion events;
// every update that changed metadata.generation (the spec changed, or
// deletion began on a type whose generation the API server bumps); every
// update where deletion began or a finalizer was removed
// ([finalizer.Predicate], for types without a generation and for someone
// else's removal of the Loop's finalizer); every update that suspends or
// resumes the object by its annotation ([suspend.Predicate]); every update
// that requests a reconcile with a new token ([request.Predicate]); and
// periodic resyncs (an update whose old and new resourceVersion are the
// same), so the cache's SyncPeriod still reconciles every object, which
// predicate.GenerationChangedPredicate alone would drop. It drops the rest:
// the Loop's own status writes and finalizer additions, and other changes
// of labels and annotations.
//
// Without it, each status write of the Loop wakes it again: one more
// reconcile per write, which finds nothing to change and costs no write,
// but after a permanent error repeats the failure and its error log. With
// it, a reconcile runs only when something it acts on changed.
//
// The Loop's Sync must then depend only on the spec, on the objects it
// watches and on time (requeue.At, requeue.After); if it reads labels or
// annotations of the object, add their filter:
//
//	predicate.Or(reconcile.Predicate(), predicate.LabelChangedPredicate{})
//
// Owned objects need no filter: a change of a child (including a write of
// the Loop's) is a reason to look at the owner again. Filter them only to
// skip changes the owner does not act on, as the At example does for its
// Pods.
func Predicate() predicate.Predicate {
	return predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{},
		finalizer.Predicate(),
		suspend.Predicate(),
		request.Predicate(),
		resync(),
	)
}

// resync lets through the updates of a periodic resync: the informer hands
// every cached object to its handlers again, as an update whose old and new
// objects are the same.
func resync() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil &&
				e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion()
		},
	}
}
