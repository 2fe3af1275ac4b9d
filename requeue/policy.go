package requeue

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Defaults of [Policy].
const (
	// DefaultConflictDelay is the requeue delay after a conflict when
	// Policy.ConflictDelay is zero: long enough for the informer cache to
	// receive the newer object, short enough to be invisible to users.
	DefaultConflictDelay = 100 * time.Millisecond
	// DefaultThrottleDelay is the requeue delay after throttling without a
	// server-suggested delay when Policy.ThrottleDelay is zero, the same
	// Retry-After that kube-apiserver's max-in-flight limit sends.
	DefaultThrottleDelay = time.Second
	// DefaultMaxConflictDelay caps the growing conflict delay when
	// Policy.MaxConflictDelay is zero.
	DefaultMaxConflictDelay = 30 * time.Second
	// ConflictsWorthAnError is how many conflicts in a row for one request
	// make [LogOutcome] log an error instead of a debug line: a conflict
	// that does not clear is a bug (a cache that never sees the object, two
	// controllers fighting), not routine.
	ConflictsWorthAnError = 10
)

// Policy turns what a reconcile produced, a ctrl.Result and an error, into
// what controller-runtime should get, by the error's [errors.Class]:
//
//   - nil error: res unchanged, and the request's backoff is forgotten;
//   - [errors.ClassConflict]: requeue after ConflictDelay, nil error (no error
//     log, no error metric: a conflict is routine); the delay doubles with
//     each further conflict in a row for the same request, up to
//     MaxConflictDelay, so a conflict that never clears (a filtered cache
//     that never sees the object it keeps re-creating) does not spin at
//     10 Hz, and from the [ConflictsWorthAnError]-th on it is logged as an
//     error;
//   - [errors.ClassThrottled]: requeue after the delay the server (or an
//     [errors.RetryAfter] marker) asked for, else ThrottleDelay; nil error;
//   - [errors.ClassTransient]: the error, for the workqueue's rate-limited
//     backoff; or, when Backoff is set, a requeue after the request's next
//     Backoff delay and a nil error (the error is then logged here, since
//     controller-runtime will not see it);
//   - [errors.ClassPermanent]: a reconcile.TerminalError (the error itself
//     when it already is one), so controller-runtime logs it, counts it as
//     terminal and does not retry until the object changes again;
//   - [errors.ClassCanceled]: when ctx is done (the controller is stopping), the
//     zero Result and nil error, logged at debug level only; otherwise as
//     transient.
//
// When err is not nil, res is dropped, except its Priority: controller-runtime
// itself ignores RequeueAfter when an error is returned (and logs a warning),
// so Policy decides the requeue from the class alone. To retry a failure at a
// particular time, return [errors.RetryAfter] instead of a RequeueAfter.
// Policy never sets the deprecated Result.Requeue.
//
// The zero Policy is ready to use; set fields before first use and do not
// change them afterwards. A Policy is safe for concurrent use and keeps
// per-request state: share one per controller, do not copy it after first
// use.
type Policy struct {
	// ConflictDelay is how long to wait after a conflict, for the cache to
	// catch up. Zero or less means [DefaultConflictDelay] (100ms).
	ConflictDelay time.Duration
	// MaxConflictDelay caps the delay of repeated conflicts. Zero or less
	// means [DefaultMaxConflictDelay] (30s).
	MaxConflictDelay time.Duration
	// ThrottleDelay is the wait after throttling when the server suggested
	// none. Zero or less means [DefaultThrottleDelay] (1s).
	ThrottleDelay time.Duration
	// Backoff, when set, turns transient errors into per-request capped
	// exponential delays instead of errors. Nil (the default) returns
	// transient errors to controller-runtime, whose workqueue backs off.
	Backoff *Backoff
	// Observe is called once for every outcome, for logging and metrics,
	// concurrently when the controller runs several workers. Nil means
	// [LogOutcome]; a custom Observe can call LogOutcome too.
	Observe func(context.Context, Outcome)

	conflictsOnce sync.Once
	conflicts     Backoff
}

// Outcome is what [Policy.Result] decided, for [Policy.Observe].
type Outcome struct {
	// Request is the request that was reconciled.
	Request reconcile.Request
	// Class is the class Policy acted on: that of Err, except that
	// [errors.ClassCanceled] while ctx is alive counts as [errors.ClassTransient].
	Class errors.Class
	// Err is the error the reconcile produced.
	Err error
	// Result is the Result Policy returns.
	Result ctrl.Result
	// Returned is the error Policy returns: nil when it requeues instead.
	Returned error
	// Conflicts is, for a conflict, how many conflicts in a row this
	// request has had, this one included; 0 otherwise.
	Conflicts int
}

// Result maps a reconcile's res and err for req to the Result and error to
// return to controller-runtime. See [Policy] for the rules.
func (p *Policy) Result(ctx context.Context, req reconcile.Request, res ctrl.Result, err error) (ctrl.Result, error) {
	class, delay := errors.Classify(err)
	o := Outcome{Request: req, Class: class, Err: err}
	if class == errors.ClassCanceled && ctx.Err() == nil {
		// Something else was canceled while the controller is running:
		// retry it like any transient failure.
		class = errors.ClassTransient
		o.Class = class
	}
	p.conflictsOnce.Do(func() {
		p.conflicts.Base = positiveOr(p.ConflictDelay, DefaultConflictDelay)
		p.conflicts.Max = positiveOr(p.MaxConflictDelay, DefaultMaxConflictDelay)
		p.conflicts.Jitter = -1 // one object: no herd to spread
	})
	if class != errors.ClassConflict {
		p.conflicts.Forget(req)
	}
	switch class {
	case errors.ClassNone:
		o.Result = res
		p.Backoff.Forget(req)
	case errors.ClassConflict:
		o.Result = After(p.conflicts.Next(req))
		o.Conflicts = p.conflicts.Failures(req)
	case errors.ClassThrottled:
		o.Result = After(positiveOr(delay, positiveOr(p.ThrottleDelay, DefaultThrottleDelay)))
	case errors.ClassPermanent:
		o.Returned = terminal(err)
		p.Backoff.Forget(req)
	case errors.ClassCanceled:
		// The controller is stopping: nothing to retry, nothing failed.
	default: // transient
		if p.Backoff != nil {
			o.Result = After(p.Backoff.Next(req))
		} else {
			o.Returned = retryable(err)
		}
	}
	if err != nil {
		o.Result.Priority = res.Priority
	}
	if p.Observe != nil {
		p.Observe(ctx, o)
	} else {
		LogOutcome(ctx, o)
	}
	return o.Result, o.Returned
}

// LogOutcome is the default [Policy.Observe]: it logs o through the logr
// logger in ctx (controller-runtime puts one there for every reconcile) at
// the level its class deserves. Conflicts, throttling, cancellations and
// errors controller-runtime will log itself (transient errors returned to
// it, permanent errors) go to V(1), debug level; a transient error that
// Policy turned into a backoff requeue is logged as an error, because
// nothing else will log it. A nil error logs nothing.
func LogOutcome(ctx context.Context, o Outcome) {
	if o.Err == nil {
		return
	}
	log := logr.FromContextOrDiscard(ctx)
	kv := []any{"class", o.Class.String(), "reason", errors.Reason(o.Err)}
	if o.Result.RequeueAfter > 0 {
		kv = append(kv, "requeueAfter", o.Result.RequeueAfter)
	}
	if o.Returned == nil && o.Class == errors.ClassTransient {
		log.Error(o.Err, "Reconcile failed, requeueing with backoff", kv...)
		return
	}
	if o.Class == errors.ClassConflict && o.Conflicts >= ConflictsWorthAnError {
		log.Error(o.Err, "Reconcile keeps conflicting, requeueing with backoff", append(kv, "conflicts", o.Conflicts)...)
		return
	}
	log.V(1).Info("Reconcile did not complete: "+o.Class.String(), append(kv, "error", o.Err.Error())...)
}

// positiveOr returns d when positive, else def.
func positiveOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

var terminalSentinel = reconcile.TerminalError(nil)

// terminal returns err as a controller-runtime terminal error.
func terminal(err error) error {
	if errors.Is(err, terminalSentinel) {
		return err
	}
	return reconcile.TerminalError(err)
}

// retryable returns err in a form controller-runtime will retry. An error
// marked transient may still wrap a terminal error, which controller-runtime
// would not retry; such an error is returned with the same text but without
// the chain.
func retryable(err error) error {
	if errors.Is(err, terminalSentinel) {
		return &retryError{msg: err.Error()}
	}
	return err
}

type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }
