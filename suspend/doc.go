// Package suspend lets the users of an object stop its controller from
// touching it, during maintenance or an incident, and resume it: what Flux's
// spec.suspend does for its own kinds, for any type.
//
// An object is suspended when its [Annotation] (reconcilekit.io/suspend:
// "true") says so, which works on any type with no change to its API, or
// when its API type has a field of its own and implements [Getter]
// (GetSuspend, over a spec.suspend as Flux has), which is typed, shows in
// the CRD's schema and in kubectl explain, and suits GitOps. Either
// suspends; both must say no to resume. [Requested] tells.
//
// What a controller does with a suspended object is its own, and
// reconcile.Loop does it for you; without the Loop, the convention is:
//
//   - No Sync and no writes to the object or its children: what a user
//     changes by hand, on the object or its children, stays as changed.
//   - Deletion still runs the object's finalizers: deleting a suspended
//     object must not hang.
//   - The conditions say so: [Mark] sets Suspended=True (message: why,
//     from Requested; its observedGeneration follows the object's, so a
//     spec edit costs one status write) and leaves Ready, Reconciling, Stalled and
//     status.observedGeneration as the last reconcile decided them, since
//     nothing new is known of the object. kstatus (kubectl wait, Flux,
//     Argo CD, cli-utils) reads it as it was left, and a spec edited while
//     suspended reads as not yet observed (observedGeneration lags, so
//     InProgress), which is the truth: the edit is not applied. An object
//     suspended before its first reconcile gets Ready=Unknown, reason
//     Suspended (InProgress, not Current).
//   - Resuming repairs at once: the first reconcile after it is an ordinary
//     one, which puts back whatever drifted, and [Clear] removes the
//     Suspended condition in the same status write.
//   - The change of [Annotation] must reach the reconciler: an event filter
//     that drops annotation changes (GenerationChangedPredicate) needs
//     [Predicate] beside it.
//
// In a reconciler of your own:
//
//	if why, ok := suspend.Requested(app); ok && app.GetDeletionTimestamp().IsZero() {
//		snapshot := statusWriter.Snapshot(app)
//		suspend.Mark(app, why)
//		_, err := snapshot.Write(ctx) // nothing when already marked
//		return ctrl.Result{}, err
//	}
//	suspend.Clear(app) // before the status write of this reconcile
//
// The package does not stop requeues already scheduled: a suspended object
// reconciled for them finds itself suspended and does nothing.
package suspend
