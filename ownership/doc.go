// Package ownership records which object owns which and finds an owner's
// children again: owner references with errors a caller can match, listing
// of children, pruning of children no longer desired, and links for the
// children owner references cannot express.
//
// [SetController] and [SetOwner] write the same owner references as
// controllerutil.SetControllerReference and SetOwnerReference, but fail
// with typed errors: [*CrossNamespaceError], [*ClusterScopedError] and
// [*AlreadyOwnedError], matched with errors.As. [IsControlledBy] compares
// by UID.
//
// Which failures are permanent is said the way the whole library says it,
// with the errors package: [*CrossNamespaceError], [*ClusterScopedError],
// [ErrNoUID] and [ErrInvalidPrune] can never succeed on retry, so they come
// marked errors.Permanent (errors.Classify says permanent, and errors.Is(err,
// reconcile.TerminalError(nil)) is true: controller-runtime does not
// requeue them). [*AlreadyOwnedError] stays transient: the other owner may
// let go, and only a retry would notice.
//
// Two ways to find children, with different costs:
//
//   - A field index ([IndexOwner], then [ListOwned] or [ControlledBy]): the
//     manager's informer cache indexes children by their controller's UID.
//     Lists cost no request and children need no extra metadata, but it
//     only works through the cached client, the cache holds every object of
//     the child type, and the index must be registered before the manager
//     starts.
//   - A label ([SetLink], then [ListLinked] or [LinkedTo]): the owner's UID
//     in a label on each child. Works with any client and the API server
//     filters, at the price of a label on every child that users can edit.
//
// Owner references cannot point across namespaces, nor from a cluster-scoped
// object into a namespace; for those children [SetLink] records the owner in
// a label and an annotation, and [EnqueueLinkedOwner] is the event handler
// that reconciles the owner when such a child changes. The garbage collector
// does not follow links: delete linked children yourself, from a finalizer
// or with [Prune].
//
// [Prune] deletes the children an owner controls that the reconciler no
// longer wants, with a propagation policy, and never touches objects it
// does not own. It lists them in the owner's namespace, through the
// [IndexOwner] index when one is registered (Prune finds out by trying it;
// through the index, no request reaches the API server), else by listing
// the namespace; its
// [WithListOptions] add to that namespace default, [InAllNamespaces] lists
// every namespace, and [LinkedTo] among its list options selects linked
// children instead. A reconciler that has listed its children already
// hands that list to [PruneListed], which lists nothing again:
//
//	// in Reconcile, with the Jobs a CronJob-like owner controls in jobs:
//	deleted, err := ownership.PruneListed(ctx, r.Client, owner, &jobs, func(o client.Object) bool {
//		return !finishedBefore(o.(*batchv1.Job), cutoff)
//	})
//
// This package changes objects in memory (SetController, SetOwner,
// SetLink) or deletes them (Prune, PruneListed); creating and updating
// children is left to the caller. It takes no field owner: a DELETE
// carries no field manager (managedFields records who set fields, and a
// deleted object has none left), so the rule of the other packages, every
// write under the operator's own name, has nothing to name here.
package ownership
