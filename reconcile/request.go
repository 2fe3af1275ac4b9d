package reconcile

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/request"
)

// A reconcile request (package request: a new token in the annotation
// reconcile.fluxcd.io/requestedAt) passes Predicate and runs an ordinary
// reconcile. For types that implement request.Status, the Loop records the
// token as handled (request.MarkHandled) when it writes the outcome of a
// Sync onto the conditions: after a success, or a failure the Policy
// reports. So a script that sees its token in
// status.lastHandledReconcileAt reads, beside it, the outcome of a reconcile
// that ran after its request. A conflict, a canceled reconcile, a transient
// failure not yet reported or a first status deferred by FirstStatusWithin
// records nothing, and a later reconcile does. The token costs no write of
// its own: it goes out in the status write of the outcome, and a token
// already recorded changes nothing.

// handleRequest records r's object's reconcile request as handled, if its
// type records requests and it has a new one.
func (r *run[T]) handleRequest(ctx context.Context) {
	o, ok := any(r.obj).(request.Object)
	if !ok || !request.MarkHandled(o) {
		return
	}
	log.FromContext(ctx).V(1).Info("reconcile request handled", "token", o.GetLastHandledReconcileRequest())
}
