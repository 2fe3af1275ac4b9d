package ranges

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Selection is a part of the hash space that an object is in or not: a
// [Range], [Set], or the ranges a replica holds at the moment.
type Selection interface {
	// Contains reports whether obj's UID hashes into the selection.
	Contains(obj client.Object) bool
}

// Predicate lets through the events of objects in s, and drops the others:
// the filter for a server that does not honour ShardSelector (see
// [Detect]), where every replica's cache holds every object. It decides by
// the same hash as the server, so a replica sees the same objects either
// way; only the memory saving is lost. An update is judged by its new
// object (an object's UID never changes).
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(ranges.Predicate(held)))
//
// In a Reconcile, s.Contains(obj) after the Get is the same test.
//
// Every event it drops counts in reconcilekit_shard_events_filtered_total.
func Predicate(s Selection) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		if s.Contains(obj) {
			return true
		}
		eventsFiltered.Inc()
		return false
	})
}
