// Package requeue builds the ctrl.Result a Reconcile returns, and maps a
// reconcile's failure to what controller-runtime should do about it. Its
// functions are written with reconcile.Result, the type ctrl.Result is an
// alias of, so the package imports controller-runtime's pkg/reconcile and
// not its root package (with the manager and the webhook server).
//
// Constructors: [After] (a delay), [At] (a wall-clock time, through an
// injectable k8s.io/utils/clock with [WithClock]), [Every] (a periodic resync with jitter) and
// [Merge] (several steps' results into one: the soonest requeue wins). None
// of them ever returns a zero RequeueAfter where a requeue was asked for:
// controller-runtime reads zero as "do not requeue", so "now" is
// [MinDelay]. None sets the deprecated Result.Requeue.
//
// [Policy] classifies the reconcile's error with the errors package and
// returns, by class: the result as is (success); a short quiet requeue
// (conflict); a requeue after the server's delay (throttled); the error for
// the workqueue's backoff, or a per-request [Backoff] delay (transient); a
// reconcile.TerminalError, never retried (permanent). It logs each outcome
// through the logr logger in the context at the level it deserves, or calls
// a hook instead. [Policy.Decide] is the one place the error is classified:
// its [Decision] also says whether the failure belongs on the object's
// conditions ([Decision.Report]: permanent errors at once, transient ones
// only once they persist), which status.MarkFailure acts on. Wrap a
// reconciler's return with it:
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		res, err := r.reconcile(ctx, req)
//		return r.Policy.Result(ctx, req, res, err)
//	}
//
// When a reconcile returns both an error and a RequeueAfter, controller-runtime
// ignores the RequeueAfter (and logs a warning); [Policy] likewise decides
// from the error alone. To retry a failure at a chosen time, return
// errors.RetryAfter(err, d).
//
// A Policy and a Backoff are configured by their fields, whose zero values
// are the defaults; [Policy.Validate] and [Backoff.Validate] report fields
// set wrong, and a Policy checks itself (and its Backoff) on first use.
//
// This package does not decide what counts as a conflict or a permanent
// error: that is the errors package's job, and its markers (Permanent,
// Transient, RetryAfter) are how a reconciler overrides the inference.
package requeue
