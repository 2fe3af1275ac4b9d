package requeue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
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
	// make [LogDecision] log an error instead of a debug line: a conflict
	// that does not clear is a bug (a cache that never sees the object, two
	// controllers fighting), not routine.
	ConflictsWorthAnError = 10
	// DefaultReportAfter is how long a request must have been failing with
	// transient or throttled errors before [Decision.Report] says so, when
	// Policy.ReportAfter is zero: longer than a flaky request or a rolling
	// restart of the API server, short enough that a user who looks sees
	// why the object is not progressing.
	DefaultReportAfter = 10 * time.Second
	// DefaultMaxTrackedRequests is how many failing requests a Policy
	// remembers (for conflict backoff and for ReportAfter) when
	// Policy.MaxTrackedRequests is zero.
	DefaultMaxTrackedRequests = 10_000
)

// Policy turns what a reconcile produced, a reconcile.Result and an error, into
// what controller-runtime should get, by the error's [errors.Class]. It is
// the one place a reconcile's error is classified: [Policy.Decide] returns a
// [Decision] that says what to return and whether the failure belongs on the
// object's conditions, so the two never disagree.
//
//   - nil error: res unchanged, and the request's backoff is forgotten;
//   - [errors.ClassConflict]: requeue after ConflictDelay, nil error (no
//     error log, no error metric: a conflict is routine); the delay doubles
//     with each further conflict in a row for the same request, up to
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
//   - [errors.ClassCanceled]: when ctx is done (the controller is stopping),
//     the zero Result and nil error, logged at debug level only; otherwise
//     as transient.
//
// When err is not nil, res is dropped, except its Priority: controller-runtime
// itself ignores RequeueAfter when an error is returned (and logs a warning),
// so Policy decides the requeue from the class alone. To retry a failure at a
// particular time, return [errors.RetryAfter] instead of a RequeueAfter.
// Policy never sets the deprecated Result.Requeue.
//
// The zero Policy is ready to use; set fields before first use and do not
// change them afterwards. A Policy is safe for concurrent use and keeps
// per-request state (bounded by MaxTrackedRequests): share one per
// controller, do not copy it after first use.
//
// On first use a Policy checks its fields with [Policy.Validate]. A Policy
// set wrong decides every reconcile as permanent, with the validation error
// (wrapping [ErrInvalidPolicy], reason "InvalidPolicy") joined to the
// reconcile's own: the failure shows on the object and in the log at once,
// instead of delays nobody asked for.
type Policy struct {
	// ConflictDelay is how long to wait after a conflict, for the cache to
	// catch up. Zero means [DefaultConflictDelay] (100ms); negative is
	// invalid.
	ConflictDelay time.Duration
	// MaxConflictDelay caps the delay of repeated conflicts. Zero means
	// [DefaultMaxConflictDelay] (30s); negative is invalid, and so is a
	// MaxConflictDelay below ConflictDelay (defaults counted).
	MaxConflictDelay time.Duration
	// ThrottleDelay is the wait after throttling when the server suggested
	// none. Zero means [DefaultThrottleDelay] (1s); negative is invalid.
	ThrottleDelay time.Duration
	// Backoff, when set, turns transient errors into per-request capped
	// exponential delays instead of errors. Nil (the default) returns
	// transient errors to controller-runtime, whose workqueue backs off.
	// The Policy validates it with its own fields.
	Backoff *Backoff
	// ReportAfter is how long a request must have failed with transient or
	// throttled errors, without a success in between, before
	// [Decision.Report] is true: one flaky request then costs no status
	// write and no event. Zero means [DefaultReportAfter] (10s); a negative
	// value reports every failure at once.
	ReportAfter time.Duration
	// MaxTrackedRequests bounds how many failing requests are remembered;
	// when full, the one that failed least recently is forgotten. Zero
	// means [DefaultMaxTrackedRequests] (10,000); negative is invalid.
	MaxTrackedRequests int
	// Clock tells the time for ReportAfter. Nil means the real clock.
	Clock clock.PassiveClock
	// Observe is called once for every decision, for logging and metrics,
	// concurrently when the controller runs several workers. Nil means
	// [LogDecision]; a custom Observe can call LogDecision too.
	Observe func(context.Context, Decision)

	validOnce sync.Once
	invalid   error // Validate's verdict, taken on first use

	conflictsOnce sync.Once
	conflicts     Backoff

	mu      sync.Mutex
	failing lru[time.Time] // when each failing request first failed
}

// Decision is what [Policy.Decide] made of one reconcile.
type Decision struct {
	// Request is the request that was reconciled.
	Request reconcile.Request
	// Class is the class Policy acted on: that of Err, except that
	// [errors.ClassCanceled] while ctx is alive counts as
	// [errors.ClassTransient].
	Class errors.Class
	// Err is the error the reconcile produced; for a Policy that
	// [Policy.Validate] rejects, joined with that error and marked
	// permanent.
	Err error
	// Report says whether the failure belongs on the object's conditions
	// and in an event: always for a permanent error; for a transient or
	// throttled one once the request has been failing for
	// Policy.ReportAfter; never for a conflict, a cancellation or success.
	// status.MarkFailure takes it from here.
	Report bool
	// FailingSince is when the request's current run of failures began;
	// zero when Err is nil or a conflict.
	FailingSince time.Time
	// Result is the Result Policy returns.
	Result reconcile.Result
	// Returned is the error Policy returns: nil when it requeues instead.
	Returned error
	// Conflicts is, for a conflict, how many conflicts in a row this
	// request has had, this one included; 0 otherwise.
	Conflicts int

	// res is the Result the reconcile asked for; delay the one a throttled
	// error asked for.
	res   reconcile.Result
	delay time.Duration
}

// Return returns what the Reconcile should return: d.Result and d.Returned.
func (d Decision) Return() (reconcile.Result, error) { return d.Result, d.Returned }

// Result maps a reconcile's res and err for req to the Result and error to
// return to controller-runtime: Decide(ctx, req, res, err).Return().
func (p *Policy) Result(ctx context.Context, req reconcile.Request, res reconcile.Result, err error) (reconcile.Result, error) {
	return p.Decide(ctx, req, res, err).Return()
}

// Decide classifies err once and decides, by the rules of [Policy], what the
// reconcile of req returns and whether its failure is worth reporting on the
// object. It records the request's failures in a row (for conflict backoff,
// Backoff and ReportAfter) and calls Observe. A reconcile that records its
// outcome in a status write decides with [Policy.DecideWith] instead.
func (p *Policy) Decide(ctx context.Context, req reconcile.Request, res reconcile.Result, err error) Decision {
	return p.commit(ctx, p.prepare(ctx, req, res, err))
}

// DecideWith decides like [Policy.Decide] a reconcile whose outcome record
// writes down first, typically as status conditions. record gets the
// decision as it will stand (Request, Class, Err, Report and FailingSince
// set; Result and Returned not yet) and returns the error of its write. That
// error joins err, and only then is the reconcile decided, once: its
// failures counted, one backoff step taken, Observe called once. So a
// failed status write is neither lost nor hides err, and it is not decided
// a second time. A nil record makes DecideWith the same as Decide.
//
//	d := policy.DecideWith(ctx, req, res, err, func(d requeue.Decision) error {
//		if d.Report {
//			status.MarkFailure(obj, d.Err, d.Class)
//		}
//		_, werr := snapshot.Write(ctx)
//		return werr
//	})
//	return d.Return()
func (p *Policy) DecideWith(ctx context.Context, req reconcile.Request, res reconcile.Result, err error, record func(Decision) error) Decision {
	d := p.prepare(ctx, req, res, err)
	if record != nil {
		if rerr := record(d); rerr != nil {
			d = p.prepare(ctx, req, res, errors.Join(err, rerr))
		}
	}
	return p.commit(ctx, d)
}

// ErrInvalidPolicy is wrapped by every error [Policy.Validate] returns.
var ErrInvalidPolicy = errors.New("requeue: invalid Policy")

// Validate reports the fields of p set wrong, each in an error wrapping
// [ErrInvalidPolicy] (joined when there are several): a negative
// ConflictDelay, MaxConflictDelay, ThrottleDelay or MaxTrackedRequests (zero
// is the way to ask for the default; ReportAfter alone gives a negative
// value a meaning), a MaxConflictDelay below ConflictDelay, defaults counted
// (a ConflictDelay of 1m alone would wait the default cap, 30s), and what
// [Backoff.Validate] rejects in Backoff, named "Backoff.<field>". The zero
// Policy is valid, and so is a nil one (where a nil Policy is accepted, it
// stands for the zero one). A Policy calls Validate once, on first use (see
// [Policy]).
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	var problems []string
	negative := func(field string, v, def any) {
		problems = append(problems, fmt.Sprintf("%s is %v: zero means the default (%v), and a negative value means nothing", field, v, def))
	}
	if p.ConflictDelay < 0 {
		negative("ConflictDelay", p.ConflictDelay, DefaultConflictDelay)
	}
	if p.MaxConflictDelay < 0 {
		negative("MaxConflictDelay", p.MaxConflictDelay, DefaultMaxConflictDelay)
	}
	if p.ThrottleDelay < 0 {
		negative("ThrottleDelay", p.ThrottleDelay, DefaultThrottleDelay)
	}
	if p.MaxTrackedRequests < 0 {
		negative("MaxTrackedRequests", p.MaxTrackedRequests, DefaultMaxTrackedRequests)
	}
	if p.ConflictDelay >= 0 && p.MaxConflictDelay >= 0 {
		if b := belowBase("MaxConflictDelay", p.MaxConflictDelay, DefaultMaxConflictDelay, "ConflictDelay", p.ConflictDelay, DefaultConflictDelay, "every conflict would wait"); b != "" {
			problems = append(problems, b)
		}
	}
	if p.Backoff != nil {
		problems = append(problems, p.Backoff.problems("Backoff.")...)
	}
	errs := make([]error, len(problems))
	for i, m := range problems {
		errs[i] = fmt.Errorf("%w: %s", ErrInvalidPolicy, m)
	}
	return errors.Join(errs...)
}

// validated returns Validate's verdict on p, taken once, on first use.
func (p *Policy) validated() error {
	p.validOnce.Do(func() { p.invalid = p.Validate() })
	return p.invalid
}

// prepare classifies err and says whether its failure is worth reporting,
// changing nothing.
func (p *Policy) prepare(ctx context.Context, req reconcile.Request, res reconcile.Result, err error) Decision {
	if invalid := p.validated(); invalid != nil {
		// A Policy set wrong decides nothing from its fields: the reconcile
		// fails, permanently, until the operator is fixed.
		err = errors.Permanent(errors.WithReason(errors.Join(invalid, err), "InvalidPolicy"))
	}
	class, delay := errors.Classify(err)
	if class == errors.ClassCanceled && ctx.Err() == nil {
		// Something else was canceled while the controller is running:
		// retry it like any transient failure.
		class = errors.ClassTransient
	}
	d := Decision{Request: req, Class: class, Err: err, res: res, delay: delay}
	switch class {
	case errors.ClassThrottled, errors.ClassTransient:
		d.FailingSince, d.Report = p.failingSince(req)
	case errors.ClassPermanent:
		d.FailingSince, _ = p.failingSince(req)
		d.Report = true
	}
	return d
}

// commit makes the prepared decision d final: it records the request's
// failures, takes the backoff step, sets what to return and calls Observe.
func (p *Policy) commit(ctx context.Context, d Decision) Decision {
	req, res := d.Request, d.res
	p.conflictsOnce.Do(func() {
		p.conflicts.Base = positiveOr(p.ConflictDelay, DefaultConflictDelay)
		p.conflicts.Max = positiveOr(p.MaxConflictDelay, DefaultMaxConflictDelay)
		p.conflicts.Jitter = -1 // one object: no herd to spread
		p.conflicts.MaxKeys = p.MaxTrackedRequests
	})
	if d.Class != errors.ClassConflict {
		p.conflicts.Forget(req)
	}
	switch d.Class {
	case errors.ClassNone:
		d.Result = res
		p.Backoff.Forget(req)
		p.forgetFailing(req)
	case errors.ClassConflict:
		// A conflict is an attempt that saw a stale object, not a failure:
		// it neither starts nor ends a run of failures.
		d.Result = After(p.conflicts.Next(req))
		d.Conflicts = p.conflicts.Failures(req)
	case errors.ClassThrottled:
		d.Result = After(positiveOr(d.delay, positiveOr(p.ThrottleDelay, DefaultThrottleDelay)))
		p.recordFailing(req, d.FailingSince)
	case errors.ClassPermanent:
		d.Returned = terminal(d.Err)
		p.Backoff.Forget(req)
		// Retrying will not happen until the object changes: the next
		// reconcile starts a new story.
		p.forgetFailing(req)
	case errors.ClassCanceled:
		// The controller is stopping: nothing to retry, nothing failed.
	default: // transient
		if p.Backoff != nil {
			d.Result = After(p.Backoff.Next(req))
		} else {
			d.Returned = retryable(d.Err)
		}
		p.recordFailing(req, d.FailingSince)
	}
	if d.Err != nil {
		d.Result.Priority = res.Priority
	}
	observeMetric(d)
	if p.Observe != nil {
		p.Observe(ctx, d)
	} else {
		LogDecision(ctx, d)
	}
	return d
}

// failingSince returns when req's current run of failures began, counting
// a failure now when none is recorded, and whether it has lasted
// ReportAfter. It records nothing.
func (p *Policy) failingSince(req reconcile.Request) (time.Time, bool) {
	clk := p.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	now := clk.Now()
	first := now
	p.mu.Lock()
	if since, ok := p.failing.get(req); ok && !since.IsZero() {
		first = *since
	}
	p.mu.Unlock()
	after := p.ReportAfter
	switch {
	case after < 0:
		return first, true
	case after == 0:
		after = DefaultReportAfter
	}
	return first, now.Sub(first) >= after
}

// recordFailing records that req has been failing since first, unless an
// earlier start is recorded.
func (p *Policy) recordFailing(req reconcile.Request, first time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	since := p.failing.getOrAdd(req, positiveOr(p.MaxTrackedRequests, DefaultMaxTrackedRequests))
	if since.IsZero() || first.Before(*since) {
		*since = first
	}
}

func (p *Policy) forgetFailing(req reconcile.Request) {
	p.mu.Lock()
	p.failing.forget(req)
	p.mu.Unlock()
}

// LogDecision is the default [Policy.Observe]: it logs d through the logr
// logger in ctx (controller-runtime puts one there for every reconcile) at
// the level its class deserves. Conflicts, throttling, cancellations and
// errors controller-runtime will log itself (transient errors returned to
// it, permanent errors) go to V(1), debug level; a transient error that
// Policy turned into a backoff requeue is logged as an error, because
// nothing else will log it. A nil error logs nothing.
func LogDecision(ctx context.Context, d Decision) {
	if d.Err == nil {
		return
	}
	log := logr.FromContextOrDiscard(ctx)
	kv := []any{"class", d.Class.String(), "reason", errors.Reason(d.Err)}
	if d.Result.RequeueAfter > 0 {
		kv = append(kv, "requeueAfter", d.Result.RequeueAfter)
	}
	if d.Returned == nil && d.Class == errors.ClassTransient {
		log.Error(d.Err, "Reconcile failed, requeueing with backoff", kv...)
		return
	}
	if d.Class == errors.ClassConflict && d.Conflicts >= ConflictsWorthAnError {
		log.Error(d.Err, "Reconcile keeps conflicting, requeueing with backoff", append(kv, "conflicts", d.Conflicts)...)
		return
	}
	log.V(1).Info("Reconcile did not complete: "+d.Class.String(), append(kv, "error", d.Err.Error())...)
}

// positiveOr returns v when positive, else def.
func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// terminal returns err as a controller-runtime terminal error: err itself
// when controller-runtime already takes it for one (an errors.Permanent
// marker or a reconcile.TerminalError in its chain), else
// reconcile.TerminalError(err).
func terminal(err error) error {
	if errors.IsTerminal(err) {
		return err
	}
	return reconcile.TerminalError(err)
}

// retryable returns err in a form controller-runtime will retry. An error
// marked transient may still wrap a terminal error, which controller-runtime
// would not retry; such an error is returned with the same text but without
// the chain.
func retryable(err error) error {
	if errors.IsTerminal(err) {
		return &retryError{msg: err.Error()}
	}
	return err
}

type retryError struct{ msg string }

func (e *retryError) Error() string { return e.msg }
