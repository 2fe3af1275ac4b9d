// Package finalizer manages the finalizer lifecycle of a Kubernetes object
// from inside a controller-runtime reconciler: add a finalizer before doing
// work that needs cleaning up, and on deletion run the cleanup and remove the
// finalizer, so the object disappears only after its cleanup succeeded.
//
// A [Writer], built with [NewWriter] from a client and the operator's field
// owner, writes: [Writer.Add] and [Writer.Remove] handle one name; a
// [Registry] registers several named [Finalizer]s that run in a fixed order,
// registration order, stopping at the first failure (controller-runtime's
// own finalizer package runs them in map order). A Registry is typed by the
// object it finalizes, so cleanups get a *v1.Widget rather than a
// client.Object to assert. A reconciler calls [Registry.AddMissing] on its
// normal path and [Registry.Finalize] when the object has a
// deletionTimestamp, both through the Writer:
//
//	w := finalizer.NewWriter(c, "site-controller")
//	var finalizers finalizer.Registry[*corev1.ConfigMap]
//	if err := finalizers.Register("example.com/dns-record", finalizer.Func[*corev1.ConfigMap](
//		func(ctx context.Context, cm *corev1.ConfigMap) error {
//			return deleteRecord(ctx, cm.Data["hostname"])
//		})); err != nil {
//		return err
//	}
//
//	// in Reconcile, with cm read from the cache:
//	if !cm.GetDeletionTimestamp().IsZero() {
//		_, err := finalizers.Finalize(ctx, w, cm)
//		return ctrl.Result{}, err // a *CleanupError keeps its finalizer
//	}
//	if _, err := finalizers.AddMissing(ctx, w, cm); err != nil {
//		return ctrl.Result{}, err
//	}
//
// The package's Registry example runs this snippet.
//
// One field owner: every write carries the field manager the operator names
// to [NewWriter], the name its other writes carry too (drift, status and
// reconcile.Loop take it where they are built; the Loop passes its own
// here), never the client's default (the binary's name, "manager" in every
// kubebuilder project) nor a name shared by every user of the package. A
// Writer built with an empty name sends nothing and runs no cleanup: every
// call returns errors.ErrNoFieldOwner, classed permanent, even when there
// would be nothing to write.
//
// Every write is a JSON merge patch of metadata.finalizers that carries the
// object's resourceVersion (an optimistic lock). Another writer's change in
// between makes the API server answer 409 Conflict instead of silently
// dropping that writer's finalizer; the call then re-reads the object
// ([Writer.APIReader]) and tries again ([Writer.Retry]). Calls that have
// nothing to change make no request at all, so calling them on every
// reconcile is free.
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
