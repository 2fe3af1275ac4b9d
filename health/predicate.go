package health

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Predicate returns the event filter for the Owns() (or Watches()) of
// children whose health their parent reports:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Website{}, builder.WithPredicates(reconcile.Predicate())).
//		Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate())).
//		Complete(loop)
//
// It passes what the parent must act on: creations and deletions; every
// update that changed the child's metadata.generation (someone edited its
// spec: the parent puts back what it wants), its labels, annotations, owner
// references, finalizers or deletionTimestamp; every update of an object
// without a generation (a ConfigMap: its data and its status cannot be told
// apart); and every update that changed its health ([Of]: Status, Reason or
// Message). It drops the rest: the status updates of a rollout that do not
// move it to another stage (replica counts, heartbeats, a Pod's
// containerStatuses), and the periodic resyncs of children, which the
// parent's own resync already covers.
//
// A child's status change then costs its parent at most one reconcile, and
// only when the parent's conditions may change; the reconcile writes the
// parent's status only if they did. No requeue timer is needed to notice
// that a child became ready: its status update is the event.
func Predicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return changed(e.ObjectOld, e.ObjectNew)
	}}
}

// changed reports whether the update from old to new is one a parent acts
// on (see Predicate).
func changed(old, new client.Object) bool {
	if old == nil || new == nil {
		return true
	}
	if new.GetGeneration() == 0 || old.GetGeneration() != new.GetGeneration() {
		return true
	}
	if !maps.Equal(old.GetLabels(), new.GetLabels()) ||
		!maps.Equal(old.GetAnnotations(), new.GetAnnotations()) ||
		!slices.Equal(old.GetFinalizers(), new.GetFinalizers()) ||
		!old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp()) ||
		!slices.EqualFunc(old.GetOwnerReferences(), new.GetOwnerReferences(), func(a, b metav1.OwnerReference) bool {
			return a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name && a.APIVersion == b.APIVersion &&
				equalBool(a.Controller, b.Controller) && equalBool(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
		}) {
		return true
	}
	if old.GetResourceVersion() == new.GetResourceVersion() && old.GetResourceVersion() != "" {
		// A resync: the same object again.
		return false
	}
	ho, errOld := Of(old)
	hn, errNew := Of(new)
	if errOld != nil || errNew != nil {
		return true
	}
	return ho != hn
}

func equalBool(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
