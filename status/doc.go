// Package status manages the status of Kubernetes objects from a reconciler:
// conditions, the kstatus summary conditions, status.observedGeneration, and
// writes of the status subresource that happen only when something changed.
//
// Conditions are set with [SetCondition] on any object that exposes them
// through the small [Setter] interface, built on apimachinery's
// meta.SetStatusCondition (use that directly on a bare
// *[]metav1.Condition). It reports whether anything changed.
// LastTransitionTime moves only when a condition's Status changes, times are
// truncated to whole seconds (what the API server stores), existing
// conditions keep their place, and the clock is injected with [WithClock].
//
// [MarkReady], [MarkReconciling] and [MarkStalled] keep the Ready,
// Reconciling and Stalled conditions consistent with the kstatus conventions
// (sigs.k8s.io/cli-utils/pkg/kstatus), so that kubectl wait, Flux, Argo CD
// and cli-utils read the object as Current, InProgress or Failed. They set
// conditions only: [ObserveGeneration] sets status.observedGeneration, of
// types implementing [ObservedGenerationSetter] (a type without it does not
// compile there), when the reconciler has looked at the current generation. [MarkFailure] is the step from a failed
// reconcile's error to those conditions.
//
// A [Writer] snapshots an object, lets the reconciler change its status, and
// patches the status subresource only if the status changed. It never
// overwrites conditions that other writers set and it survives conflicts by
// re-reading the object and re-applying only its own changes.
//
// One field owner: a Writer is built with [NewWriter] from a client and the
// field manager the operator names, the name its other writes carry too
// (drift, finalizer and reconcile.Loop take it where they are built), so
// that the API server records one field manager per operator. There is no
// default: not the client's (the binary's name, "manager" in every
// kubebuilder project), not one shared by every user of the package. A
// Writer built with an empty name sends nothing and every write returns
// errors.ErrNoFieldOwner, classed permanent.
//
// [FromError] turns an error into a condition of the reconciler's own type
// whose reason and message stay the same when the same failure repeats, so
// a failing reconcile does not rewrite the status on every retry.
//
// The package does not decide what a reconciler's conditions mean, fetch
// objects, or write anything but the status subresource.
//
//	w := status.NewWriter(c, "my-controller")
//	w.APIReader = mgr.GetAPIReader()
//	_, err := w.Patch(ctx, obj, func() error {
//		status.MarkReady(obj, "Reconciled", "all replicas available")
//		return nil
//	})
package status
