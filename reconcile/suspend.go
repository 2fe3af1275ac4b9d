package reconcile

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// A suspended object (package suspend: its annotation, or a type's own
// field through suspend.Getter) is reconciled as far as this: its
// Suspended condition is written once (suspend.Mark), and nothing else.
// No finalizer is added, Sync does not run, no child is written, no event is
// recorded, nothing is requeued, and a reconcile request waits for the
// resume. Deletion is handled before, so a suspended object's finalizers
// run. The first reconcile after it resumes removes the condition
// (suspend.Clear) in the status write of its outcome.

// suspended records that r's object is suspended, why says how, and
// returns: a status write when the condition is news, nothing otherwise.
func (r *run[T]) suspended(ctx context.Context, w *status.Writer, read client.Object, why string) (ctrl.Result, error) {
	r.begin(w, read)
	suspend.Mark(r.obj, why, r.l.conditionOptions()...)
	written, err := r.snap.Write(ctx)
	if err != nil {
		return r.policy.Decide(ctx, r.req, ctrl.Result{}, fmt.Errorf("write status: %w", err)).Return()
	}
	if written {
		log.FromContext(ctx).Info("suspended: not reconciling until resumed", "why", why)
	}
	// A success: what the Policy remembers of earlier failures goes.
	return r.policy.Decide(ctx, r.req, ctrl.Result{}, nil).Return()
}

// resume removes the mark of a suspension from r's object, before Sync, so
// that the status write of this reconcile's outcome carries its removal.
func (r *run[T]) resume() {
	r.resumed = suspend.Clear(r.obj)
}

// conditionOptions are the options of the Loop's condition setters.
func (l *Loop[T]) conditionOptions() []status.Option {
	if l.Clock == nil {
		return nil
	}
	return []status.Option{status.WithClock(l.Clock)}
}
