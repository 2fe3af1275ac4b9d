package finalizer

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Predicate lets through every event that matters to finalizers:
// each update where deletion began (the deletionTimestamp was set) or a
// finalizer was removed, and all create, delete and generic events. Other
// updates are dropped.
//
// Add it with predicate.Or next to a filter that may hide deletion, such as
// predicate.GenerationChangedPredicate:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(predicate.Or(
//			predicate.GenerationChangedPredicate{}, finalizer.Predicate())))
//
// Why: the start of a deletion is an update, not a delete event. Whether
// GenerationChangedPredicate passes it depends on the type. A real
// kube-apiserver bumps metadata.generation when it sets the deletionTimestamp
// of an object that tracks generation (custom resources, Deployments), so
// that update gets through; but types without a generation (ConfigMap,
// Secret: always 0) never get a bump, and controller-runtime's fake client
// bumps nothing, so there the update is dropped and cleanup never starts.
// Predicate makes the outcome the same everywhere. It also lets through the
// removal of a finalizer by someone else, so [Registry.AddMissing] can put it
// back; the addition of one (usually the reconciler's own AddMissing) is
// dropped, as it needs no reconcile.
func Predicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			if e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero() {
				return true
			}
			return lostFinalizer(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
		},
	}
}

// lostFinalizer reports whether a finalizer of old is missing from new.
// Additions (our own AddMissing, most often) are not worth a reconcile.
func lostFinalizer(old, new []string) bool {
	for _, f := range old {
		if !slices.Contains(new, f) {
			return true
		}
	}
	return false
}
