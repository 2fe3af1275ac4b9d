package suspend

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Predicate lets through the updates that suspend or resume an object: those
// where [Requested] of the old and the new object differ. Create, delete and
// generic events pass. Add it with predicate.Or beside a filter that drops
// changes of annotations, such as predicate.GenerationChangedPredicate:
// toggling [Annotation] changes no generation. (A field of the spec, such as
// spec.suspend, does; reconcile.Predicate includes this one.)
func Predicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			_, was := Requested(e.ObjectOld)
			_, is := Requested(e.ObjectNew)
			return was != is
		},
	}
}
