// Package applyset writes the children of an object as one set: every
// child of any kind, in several namespaces or cluster-scoped, written only
// where it drifted; membership recorded where kubectl and other tools read
// it; children that need others waiting for them; and the children that
// left the set deleted, exactly those, wherever they live.
//
// A reconciler that writes its children one at a time (drift.Writer.Ensure)
// and prunes by owner reference (ownership.Prune) cannot reach a child in
// another namespace or a cluster-scoped one, writes a Deployment before the
// Secret it mounts exists, and cannot say what a reconcile would write
// before it writes it. A [Set] does it in one call:
//
//	set := applyset.New(mgr.GetClient(), "webapp-controller") // once, beside the reconciler
//
//	// in Reconcile (or a reconcile.Loop's Sync):
//	children := []applyset.Child{
//		{Object: config},
//		{Object: deployment, DependsOn: []client.Object{config}},
//		{Object: service},
//	}
//	if app.Spec.DisruptionBudget != nil {
//		children = append(children, applyset.Child{Object: pdb})
//	}
//	res, err := set.Apply(ctx, app, children)
//	if err != nil {
//		return reconcile.Progress{}, err
//	}
//	return reconcile.Progress{Reason: "Deployed"}.WithChildren(res.Health()), nil
//
// When app.Spec.DisruptionBudget goes back to nil, the next Apply deletes
// the PodDisruptionBudget. [Set.Apply] says the steps; in short:
//
//   - Each child is written with drift.Writer's rules: nothing when nothing
//     drifted, one patch of what drifted otherwise, fields the operator
//     wrote before and no longer wants removed (managedFields), somebody
//     else's object never written over, the managers of [Set].Replaces
//     taken over, a hot loop stopped. The parent is the child's controller
//     where an owner reference can reach it, and linked to it (package
//     ownership's links) in other namespaces and for cluster-scoped
//     children.
//   - Membership is KEP-3659's, kubectl's ApplySet: every child carries
//     [PartOfLabel] with the parent's [ID], and the parent carries
//     [IDLabel], [ToolingAnnotation], and the kinds and other namespaces
//     of its children ([GroupKindsAnnotation], [NamespacesAnnotation]).
//     kubectl get -A -l applyset.kubernetes.io/part-of=<id> lists a
//     parent's children; kubectl apply --prune leaves a set another tool
//     manages alone, and so does a Set.
//   - A child that left the set is deleted once, wherever it lives: the
//     kinds the parent records are listed by the label (from the cache).
//     Nothing is deleted that the Set did not write: its field owner must
//     own the member's PartOfLabel in managedFields, so an object that
//     copied the label (kro#1153: a controller that copied labels onto the
//     Secrets it made, which were then pruned in a loop) is left alone, and
//     so is one another owner controls. A delete the server refuses (a
//     webhook, RBAC) keeps the member in the record and is an error naming
//     it, a [*PruneError], retried with backoff; it is never forgotten
//     (Flux kustomize-controller#1664 dropped such objects from its
//     inventory, orphaned). A member whose deletion waits for finalizers
//     keeps its place, and the parent's health names it.
//   - Namespaces and CustomResourceDefinitions in the set are written
//     first, and what lives in them or is of their kind waits until they
//     are healthy (a CRD Established); then Child.DependsOn (a Deployment
//     after the Secret it mounts, an application after its database is
//     Ready), then the kinds in Helm's install order. A child waits while
//     what it depends on is not healthy by its Child.Health (health.Of, or
//     the operator's own [HealthFunc]): no write, no error, no retry, and
//     [Result.Health] says what it waits for. The parent is woken by its
//     watches of the children it owns when one changes, and, for a child
//     whose kind is not installed yet, by [Set.EnqueueWaiting] when a
//     CustomResourceDefinition appears.
//   - [Plan] makes the same call say what it would do and send no
//     mutating request: per child create, patch (with the drifted paths),
//     unchanged, wait or prune, and whether the parent's record changes.
//     The real call then sends exactly those writes ([Result.Writes]).
//   - A patch that puts back what another field manager changed (kubectl
//     scale, kubectl edit, another controller) is drift someone else made:
//     a DriftCorrected event on the parent names the child, the fields and
//     the managers, and reconcilekit_drift_corrected_total counts it by
//     kind. A field the operator still owns whose value differs is its
//     own change of what it wants, and says nothing.
//   - Bad input is refused before any write, with a permanent error
//     wrapping [ErrInvalidChildren] (reason InvalidChildren: a
//     reconcile.Loop shows it as Stalled): two children of the same kind,
//     namespace and name, a dependency cycle, a dependency on a child not
//     in the set, a cluster-scoped child with a namespace.
//
// # Why a set, and why this name
//
// The package is named after what users build with it, as kubectl names
// it (KEP-3659 "ApplySet"): a parent and the children it applies, one
// inventory any tool can read. Flux's ssa.ResourceManager does staged
// applies of a set from manifests, with an inventory in the object's
// status and kstatus waits; kro orders a graph of resources by readiness;
// Helm installs by kind. A Set is for an operator: children built in Go,
// written with drift's rules (no request when converged, not even a
// dry-run), kubectl's labels for the inventory, and waits that are not
// loops.
//
// # What it costs
//
// A converged set costs no request: every read comes from the manager's
// cache (the kinds it lists and writes must be cached, which the
// controller's watches of its children do), and nothing is written. One
// child changed costs one patch; one child removed, one delete; a kind
// added to the set, or its last member gone, one patch of the parent.
// TestConvergedSetCosts measures a set of 100 children of 5 kinds on a
// real API server, at the transport.
//
// Flux's ssa.ResourceManager.ApplyAllStaged sends a server-side dry-run
// apply of every object of the set on every reconcile, to find what
// changed, after reading it: on the same 100 children, converged, 200
// requests (100 reads and 100 dry-run applies), 100 when its client caches
// unstructured objects; one child changed, 201 or 101. A Set compares in
// the process. The module applyset/internal/fluxcompare measures both in
// one run (make compare-flux).
//
// # What it needs
//
// The Set reads its children and lists its members through its client:
// give it the manager's client, with every kind of the set watched (Owns()
// for the children the parent controls, ownership.EnqueueLinkedOwner for
// those linked across namespaces), so that reads are served by the cache
// and a child's change wakes its parent. Build the manager's client with
// freshness.Tracker.NewClient, so that its reads and lists follow its own
// writes: a child's health (health.Of of what the Set read or wrote) is
// then never that of a copy older than the Set's last write of it.
// The cache must keep managedFields (diet.ManagedFields keeps what the Set
// reads; a cache that strips them turns pruning off for every member:
// none can be shown to be the Set's). A kind of unstructured children is
// read from the cache only with client.CacheOptions{Unstructured: true}.
//
// A child linked across namespaces, or a cluster-scoped one, is not
// deleted by the garbage collector with its parent: delete the set from a
// finalizer with Apply(ctx, parent, nil), which prunes every member.
//
// # What it remembers
//
// A Set keeps nothing per child between calls: the members are on the API
// server, in their label and the parent's annotations. It remembers one
// thing per parent, and only while a child of the parent waits for its
// kind to be installed: the parent's namespace and name and the API groups
// it waits for, so that a CustomResourceDefinition's event wakes it
// ([Set.EnqueueWaiting]). A parent is forgotten
//
//   - when an Apply finds it waits for nothing (the kind is installed, the
//     child left the set, or a finalizer's Apply(ctx, parent, nil));
//   - when it is found gone ([Set.Forget]): a reconcile.Loop calls the
//     function in its Gone field when it finds its object gone, so give
//     it loop.Gone = set.Forget; a reconciler of its own calls Forget where
//     its Get finds the parent gone. A parent deleted while the process did
//     not watch it (no delete event came) is found gone by the reconcile
//     the next event of a CustomResourceDefinition of its group wakes;
//   - past [Set].MaxWaiting parents ([DefaultMaxWaiting], 10,000), an
//     arbitrary one, which then waits for its next resync instead.
//
// The gauge reconcilekit_applyset_entries counts, summed over the Sets of
// the process, the parents remembered as waiting and those whose wake-ups
// are scheduled (docs/metrics.md).
//
// The package writes no status: Result.Health goes to the parent's
// conditions (reconcile.Progress.WithChildren, health.Mark).
package applyset
