package reconciletest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Default bounds of [Converge].
const (
	// DefaultMaxRuns is how many runs Converge allows before it declares
	// that the reconciler does not converge.
	DefaultMaxRuns = 50
	// DefaultMaxErrors is how many runs in a row may fail with an error
	// before Converge gives up.
	DefaultMaxErrors = 10
)

// Option configures [Converge].
type Option func(*options)

type options struct {
	counter       *Counter
	clock         *testingclock.FakeClock
	faults        *FaultInjector
	maxRuns       int
	maxErrors     int
	resync        time.Duration
	allowTerminal bool
}

// WithCounter names the [Counter] that wraps the reconciler's client. It is
// required: without it Converge cannot see what the reconciler writes.
func WithCounter(c *Counter) Option {
	return func(o *options) { o.counter = c }
}

// StepClock gives Converge the fake clock the reconciler reads, to step.
// When a run returns a RequeueAfter, Converge steps the clock by that much
// before the next run, so a reconciler waiting for a time sees it arrive.
// Without a clock (or with nil) the next run simply happens at once. Runs
// that fail with an error do not step the clock.
//
// Its name says that Converge moves this clock: the options of other
// packages that hand over a clock (requeue.WithClock, status.WithClock)
// only read the time from it.
func StepClock(c *testingclock.FakeClock) Option {
	return func(o *options) { o.clock = c }
}

// WithFaults names the [FaultInjector] on the reconciler's client. Faults
// are injected while converging and paused for the idempotency run, so
// that the check judges the reconciler and not the injected faults.
func WithFaults(f *FaultInjector) Option {
	return func(o *options) { o.faults = f }
}

// MaxRuns bounds the number of runs before Converge fails the test for not
// converging; the default is [DefaultMaxRuns].
func MaxRuns(n int) Option {
	return func(o *options) { o.maxRuns = n }
}

// MaxErrors bounds the number of runs in a row that may fail with an error
// (which Converge retries, as controller-runtime would); one more fails the
// test. The default is [DefaultMaxErrors]; 0 fails on the first error.
func MaxErrors(n int) Option {
	return func(o *options) { o.maxErrors = n }
}

// Resync declares that a RequeueAfter of d or longer is the reconciler's
// periodic resync rather than a request to run again: Converge treats such
// a run as converged. Without it, a reconciler that always asks to be
// requeued never converges.
func Resync(d time.Duration) Option {
	return func(o *options) { o.resync = d }
}

// AllowTerminalError accepts a terminal error (reconcile.TerminalError) as
// the end of the loop, as controller-runtime does: it stops retrying. The
// idempotency run must then write nothing and return a terminal error
// again. Without this option a terminal error fails the test.
func AllowTerminalError() Option {
	return func(o *options) { o.allowTerminal = true }
}

// Report says how a reconciler converged.
type Report struct {
	// Runs is the number of runs until the reconciler stopped asking to be
	// requeued, not counting the idempotency run.
	Runs int
	// Result is what the converging run returned.
	Result reconcile.Result
	// Err is the terminal error the reconciler ended with, when
	// [AllowTerminalError] allowed one; nil otherwise.
	Err error
	// Errors are the errors of runs that failed and were retried, oldest
	// first.
	Errors []error
	// Requests are the requests made while converging, oldest first; the
	// idempotency run's are not included.
	Requests []APIRequest
}

// Writes returns the writes among [Report.Requests].
func (r Report) Writes() []APIRequest { return writes(r.Requests) }

// run is one run of the reconciler, kept for failure messages.
type run struct {
	n        int
	result   reconcile.Result
	err      error
	requests []APIRequest
}

func (r run) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d: %s", r.n, outcome(r.result, r.err))
	w := writes(r.requests)
	if len(w) == 0 {
		b.WriteString("; no writes")
		return b.String()
	}
	b.WriteString("; wrote:")
	for _, req := range w {
		b.WriteString("\n    " + req.String())
	}
	return b.String()
}

// Converge runs r for req until it stops asking to be requeued, then runs it
// once more and fails the test if that run wrote anything: a reconciler
// whose work is done must leave a converged object alone, or it fights
// every other writer and loads the API server forever.
//
// A run has converged when it returns an empty result and no error (or a
// RequeueAfter of at least [Resync]'s period, or, with
// [AllowTerminalError], a terminal error). A RequeueAfter steps the
// [StepClock] clock; a non-terminal error is retried at once, up to
// [MaxErrors] runs in a row; after [MaxRuns] runs the test fails with the
// last runs' results and writes. The idempotency run must also return the
// same kind of outcome: asking to be requeued again or failing is reported
// as well. When it writes, the failure lists each write and, for updates
// and patches, what it changed.
//
// To say what an update changed, Converge reads the stored object once
// before each update of the idempotency run, through the client the
// counter wraps; that read is not recorded. The counter must see only this
// reconciler's requests while Converge runs: other goroutines writing
// through the same counter (a running manager, say) would be blamed on it.
//
// [WithCounter] is required. Converge uses t.Context() for the runs, and
// stops at the first fatal problem with t.Fatalf; a non-idempotent
// reconciler is reported with t.Errorf after the report is complete.
func Converge(t testing.TB, r reconcile.Reconciler, req reconcile.Request, opts ...Option) Report {
	t.Helper()
	o := options{maxRuns: DefaultMaxRuns, maxErrors: DefaultMaxErrors}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.counter == nil:
		t.Fatalf("reconciletest: Converge needs WithCounter(c), with the Counter that wraps the reconciler's client; without it no write can be seen")
		return Report{}
	case r == nil:
		t.Fatalf("reconciletest: Converge needs a reconciler, got nil")
		return Report{}
	case o.maxRuns < 1:
		t.Fatalf("reconciletest: MaxRuns(%d): need at least 1", o.maxRuns)
		return Report{}
	case o.maxErrors < 0:
		t.Fatalf("reconciletest: MaxErrors(%d): need 0 or more", o.maxErrors)
		return Report{}
	case o.resync < 0:
		t.Fatalf("reconciletest: Resync(%v): need a positive period", o.resync)
		return Report{}
	}

	ctx := t.Context()
	settled := func(res reconcile.Result, err error) bool {
		if err != nil {
			return o.allowTerminal && errors.IsTerminal(err)
		}
		return !requeues(res) || (o.resync > 0 && res.RequeueAfter >= o.resync)
	}

	var rep Report
	start := o.counter.mark(false)
	var history []run
	failedInARow := 0
	for n := 1; ; n++ {
		if n > o.maxRuns {
			t.Fatalf("reconciletest: %q did not converge within %d runs; the last runs:\n  %s",
				req, o.maxRuns, joinRuns(history))
			return rep
		}
		mark := o.counter.mark(false)
		res, err := r.Reconcile(ctx, req)
		reqs, _ := o.counter.since(mark)
		history = append(history, run{n: n, result: res, err: err, requests: reqs})
		if len(history) > 5 {
			history = history[1:]
		}
		if settled(res, err) {
			rep.Runs, rep.Result, rep.Err = n, res, err
			break
		}
		if err != nil {
			if errors.IsTerminal(err) {
				t.Fatalf("reconciletest: %q: run %d returned a terminal error, which controller-runtime never retries: %v\n"+
					"(pass AllowTerminalError() if that is the expected outcome)", req, n, err)
				return rep
			}
			rep.Errors = append(rep.Errors, err)
			failedInARow++
			if failedInARow > o.maxErrors {
				t.Fatalf("reconciletest: %q: %d runs in a row failed (MaxErrors is %d); the last runs:\n  %s",
					req, failedInARow, o.maxErrors, joinRuns(history))
				return rep
			}
			t.Logf("reconciletest: %q: run %d failed, retrying: %v", req, n, err)
			continue
		}
		failedInARow = 0
		if res.RequeueAfter > 0 && o.clock != nil {
			o.clock.Step(res.RequeueAfter)
		}
	}
	rep.Requests, _ = o.counter.since(start)

	// The idempotency run: the object has converged, so this run must find
	// nothing to do.
	if o.faults != nil {
		o.faults.setPaused(true)
		defer o.faults.setPaused(false)
	}
	mark := o.counter.mark(true)
	res, err := r.Reconcile(ctx, req)
	o.counter.mark(false)
	reqs, written := o.counter.since(mark)

	var problems []string
	var wrote []string
	for i, rq := range reqs {
		if !rq.Verb.IsWrite() {
			continue
		}
		s := fmt.Sprintf("%d. %s", len(wrote)+1, rq)
		if w := written[i]; w != "" {
			s += "\n     " + strings.ReplaceAll(strings.TrimRight(w, "\n"), "\n", "\n     ")
		}
		wrote = append(wrote, s)
	}
	if len(wrote) > 0 {
		problems = append(problems, fmt.Sprintf("it wrote %d time(s):\n  %s", len(wrote), strings.Join(wrote, "\n  ")))
	}
	switch {
	case err != nil && (rep.Err == nil || !settled(res, err)):
		problems = append(problems, fmt.Sprintf("it failed: %v", err))
	case err == nil && rep.Err != nil:
		problems = append(problems, fmt.Sprintf("it returned no error, but the converging run ended with the terminal error %v", rep.Err))
	case err == nil && !settled(res, nil):
		problems = append(problems, fmt.Sprintf("it asked to be requeued again (%s)", outcome(res, nil)))
	}
	if len(problems) > 0 {
		t.Errorf("reconciletest: %q is not idempotent: it converged after %d run(s), then the next run found work to do:\n- %s",
			req, rep.Runs, strings.Join(problems, "\n- "))
	}
	return rep
}

// outcome describes what a run returned.
func outcome(res reconcile.Result, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("error %v", err)
	case res.RequeueAfter > 0:
		return fmt.Sprintf("requeue after %v", res.RequeueAfter)
	case requeues(res):
		return "requeue"
	}
	return "done"
}

// requeues reports whether controller-runtime requeues after res: a
// positive RequeueAfter or the deprecated Requeue flag. A Result that only
// sets Priority does not requeue.
func requeues(res reconcile.Result) bool {
	return res.RequeueAfter > 0 || res.Requeue //nolint:staticcheck // Requeue is deprecated but still honoured
}

func joinRuns(rs []run) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, "\n  ")
}
