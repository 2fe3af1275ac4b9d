// Package finalizer manages the finalizer lifecycle of a Kubernetes object
// from inside a controller-runtime reconciler: add a finalizer before doing
// work that needs cleaning up, and on deletion run the cleanup and remove the
// finalizer, so the object disappears only after its cleanup succeeded.
//
// [Ensure] and [Remove] handle one name; a [Set] registers several named
// [Finalizer]s that run in a fixed order, registration order, stopping at the
// first failure (controller-runtime's own finalizer package runs them in map
// order). A reconciler calls [Set.EnsureAll] on its normal path and
// [Set.Run] when the object has a deletionTimestamp:
//
//	if !obj.GetDeletionTimestamp().IsZero() {
//		res, err := finalizers.Run(ctx, c, obj)
//		return ctrl.Result{}, err // a *CleanupError keeps its finalizer
//	}
//	if _, err := finalizers.EnsureAll(ctx, c, obj); err != nil {
//		return ctrl.Result{}, err
//	}
//
// Every write is a JSON merge patch of metadata.finalizers that carries the
// object's resourceVersion (an optimistic lock). Another writer's change in
// between makes the API server answer 409 Conflict instead of silently
// dropping that writer's finalizer; the call then re-reads the object
// ([WithAPIReader]) and tries again ([WithBackoff]). Calls that have nothing
// to change make no request at all, so calling them on every reconcile is
// free.
//
// Edge cases handled: no finalizer is ever added to an object being deleted
// ([ErrDeleting]), including when deletion starts between the caller's read
// and the write; an object that vanishes before or while its last finalizer
// is removed counts as done; a failed cleanup keeps its finalizer and returns
// a [*CleanupError] that unwraps to the cause, so classification by the
// errors package (transient, permanent, ...) sees through it.
//
// Watch trap: the start of a deletion reaches a controller as an update
// event. predicate.GenerationChangedPredicate lets it through for custom
// resources only because a real API server bumps their generation on
// deletion; for types without a generation, and with the fake client, it
// drops it. Combine it with [Predicate] to never miss a deletion.
//
// This package does not decide what to clean up or when to requeue; owned
// objects in the same namespace are better left to the garbage collector
// through owner references (see package ownership).
package finalizer
