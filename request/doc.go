// Package request is reconcile on request: a user or a script asks the
// controller to reconcile an object now, without changing its spec, and
// can wait until it was done, as flux reconcile does with Flux's objects.
//
// The request is an annotation whose value is a token ([Annotation],
// reconcile.fluxcd.io/requestedAt, Flux's own: what already asks Flux's
// objects works here too); a new value is a new request. The controller
// reconciles the object, and its status records the token it handled
// (status.lastHandledReconcileAt, through the [Status] interface the API
// type implements), so the caller waits for its token and then reads the
// outcome:
//
//	token=$(date +%s)
//	kubectl annotate --overwrite widget/w reconcile.fluxcd.io/requestedAt="$token"
//	kubectl wait --for=jsonpath='{.status.lastHandledReconcileAt}'="$token" widget/w
//	kubectl wait --for=condition=Ready widget/w --timeout=0
//
// reconcile.Loop does all of it for API types that implement [Status]: its
// event filter passes the request ([Predicate], which
// GenerationChangedPredicate alone would drop), it runs the reconcile, and
// it records the token with [MarkHandled] in the status write that carries
// the outcome, so the token is never seen before the outcome it asked for. A
// request costs that one status write; an annotation that does not change
// costs nothing, resyncs included. A suspended object (package suspend)
// handles no request: its token is recorded by the first reconcile after it
// resumes.
//
// In a reconciler of your own, call [MarkHandled] where the outcome is
// written, and add [Predicate] to the event filter:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Website{}, builder.WithPredicates(predicate.Or(
//			predicate.GenerationChangedPredicate{}, request.Predicate())))
package request
