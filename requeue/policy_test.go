package requeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/requeue"
)

var widgets = schema.GroupResource{Group: "testing.reconcilekit.io", Resource: "widgets"}

// got is what Policy.Result returned, in comparable form.
type got struct {
	Result     ctrl.Result
	Err        string
	Terminal   bool
	Logged     []logEntry
	ErrorIsNil bool
}

func run(t *testing.T, p *requeue.Policy, ctx context.Context, res ctrl.Result, err error) got {
	t.Helper()
	rec := &recorder{}
	ctx = logr.NewContext(ctx, rec.logger())
	r, e := p.Result(ctx, req("w"), res, err)
	g := got{Result: r, Terminal: errors.Is(e, reconcile.TerminalError(nil)), Logged: rec.all(), ErrorIsNil: e == nil}
	if e != nil {
		g.Err = e.Error()
	}
	return g
}

// TestPolicyByClass covers every class with the zero Policy and with a
// configured one: what is returned and at which level it is logged.
func TestPolicyByClass(t *testing.T) {
	plain := errors.New("flaky")
	debug := func(class string) []logEntry {
		return []logEntry{{Level: 1, Msg: "Reconcile did not complete: " + class}}
	}
	tests := []struct {
		name   string
		policy *requeue.Policy
		res    ctrl.Result
		err    error
		want   got
	}{
		{"success keeps the result", &requeue.Policy{}, ctrl.Result{RequeueAfter: time.Hour}, nil,
			got{Result: ctrl.Result{RequeueAfter: time.Hour}, ErrorIsNil: true}},
		{"conflict: quiet short requeue", &requeue.Policy{}, ctrl.Result{}, apierrors.NewConflict(widgets, "w", plain),
			got{Result: ctrl.Result{RequeueAfter: requeue.DefaultConflictDelay}, ErrorIsNil: true, Logged: debug("conflict")}},
		{"conflict: configured delay", &requeue.Policy{ConflictDelay: time.Second}, ctrl.Result{}, apierrors.NewAlreadyExists(widgets, "w"),
			got{Result: ctrl.Result{RequeueAfter: time.Second}, ErrorIsNil: true, Logged: debug("conflict")}},
		{"throttled: the server's delay", &requeue.Policy{}, ctrl.Result{}, apierrors.NewTooManyRequests("slow", 7),
			got{Result: ctrl.Result{RequeueAfter: 7 * time.Second}, ErrorIsNil: true, Logged: debug("throttled")}},
		{"throttled without delay: default", &requeue.Policy{}, ctrl.Result{}, apierrors.NewTooManyRequestsError("slow"),
			got{Result: ctrl.Result{RequeueAfter: requeue.DefaultThrottleDelay}, ErrorIsNil: true, Logged: debug("throttled")}},
		{"throttled without delay: configured", &requeue.Policy{ThrottleDelay: 3 * time.Second}, ctrl.Result{}, errors.RetryAfter(plain, 0),
			got{Result: ctrl.Result{RequeueAfter: 3 * time.Second}, ErrorIsNil: true, Logged: debug("throttled")}},
		{"RetryAfter marker", &requeue.Policy{}, ctrl.Result{RequeueAfter: time.Hour}, errors.RetryAfter(plain, 30*time.Second),
			got{Result: ctrl.Result{RequeueAfter: 30 * time.Second}, ErrorIsNil: true, Logged: debug("throttled")}},
		{"transient: the error, result dropped", &requeue.Policy{}, ctrl.Result{RequeueAfter: time.Hour}, plain,
			got{Err: "flaky", Logged: debug("transient")}},
		{"transient with Backoff: requeue and an error log", &requeue.Policy{Backoff: &requeue.Backoff{Base: 2 * time.Second, Jitter: -1}}, ctrl.Result{}, plain,
			got{Result: ctrl.Result{RequeueAfter: 2 * time.Second}, ErrorIsNil: true, Logged: []logEntry{{Error: true, Msg: "Reconcile failed, requeueing with backoff"}}}},
		{"permanent: terminal", &requeue.Policy{}, ctrl.Result{RequeueAfter: time.Hour}, apierrors.NewBadRequest("nope"),
			got{Err: "terminal error: nope", Terminal: true, Logged: debug("permanent")}},
		{"Permanent marker stays as is", &requeue.Policy{}, ctrl.Result{}, errors.Permanent(plain),
			got{Err: "flaky", Terminal: true, Logged: debug("permanent")}},
		{"Transient marker over a terminal error is still retried", &requeue.Policy{}, ctrl.Result{}, errors.Transient(reconcile.TerminalError(plain)),
			got{Err: "terminal error: flaky", Logged: debug("transient")}},
		{"canceled while running: transient", &requeue.Policy{}, ctrl.Result{}, fmt.Errorf("call: %w", context.Canceled),
			got{Err: "call: context canceled", Logged: debug("transient")}},
		{"error keeps the result's priority", &requeue.Policy{}, ctrl.Result{RequeueAfter: time.Hour, Priority: ptr.To(4)}, apierrors.NewConflict(widgets, "w", plain),
			got{Result: ctrl.Result{RequeueAfter: requeue.DefaultConflictDelay, Priority: ptr.To(4)}, ErrorIsNil: true, Logged: debug("conflict")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run(t, tt.policy, t.Context(), tt.res, tt.err)); diff != "" {
				t.Errorf("Policy.Result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyCanceledAtShutdown proves a canceled reconcile during shutdown
// is neither retried nor logged as an error.
func TestPolicyCanceledAtShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var p requeue.Policy
	g := run(t, &p, ctx, ctrl.Result{RequeueAfter: time.Minute}, ctx.Err())
	want := got{ErrorIsNil: true, Logged: []logEntry{{Level: 1, Msg: "Reconcile did not complete: canceled"}}}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("Policy.Result (-want +got):\n%s", diff)
	}
}

// TestPolicyBackoffForgetsOnSuccess proves the per-key backoff grows while a
// key fails, and restarts after a success or a permanent failure.
func TestPolicyBackoffForgetsOnSuccess(t *testing.T) {
	b := &requeue.Backoff{Base: time.Second, Jitter: -1}
	p := requeue.Policy{Backoff: b, Observe: func(context.Context, requeue.Outcome) {}}
	ctx := t.Context()
	step := func(err error) time.Duration {
		r, _ := p.Result(ctx, req("w"), ctrl.Result{}, err)
		return r.RequeueAfter
	}
	flaky := errors.New("flaky")
	gotDelays := []time.Duration{step(flaky), step(flaky), step(flaky), step(nil), step(flaky), step(errors.Permanent(flaky)), step(flaky)}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 0, time.Second, 0, time.Second}
	if diff := cmp.Diff(want, gotDelays); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	p.Result(ctx, req("w"), ctrl.Result{}, nil)
	if b.Len() != 0 {
		t.Errorf("Backoff remembers %d keys after success, want 0", b.Len())
	}
}

// TestPolicyObserve proves the hook replaces the default logging and sees
// the outcome.
func TestPolicyObserve(t *testing.T) {
	var seen []requeue.Outcome
	p := requeue.Policy{Observe: func(_ context.Context, o requeue.Outcome) { seen = append(seen, o) }}
	rec := &recorder{}
	ctx := logr.NewContext(t.Context(), rec.logger())
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	p.Result(ctx, req("w"), ctrl.Result{}, conflict)
	want := []requeue.Outcome{{Request: req("w"), Class: errors.ClassConflict, Err: conflict, Result: ctrl.Result{RequeueAfter: requeue.DefaultConflictDelay}, Conflicts: 1}}
	if diff := cmp.Diff(want, seen, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(rec.all()) != 0 {
		t.Errorf("default logging ran although Observe was set: %v", rec.all())
	}
}

// TestPolicyBacksOffConflictsThatDoNotClear proves a conflict that repeats
// for one request is not retried at a fixed 10 Hz forever: the delay doubles
// up to the cap, reaches an error log, and a success starts over.
func TestPolicyBacksOffConflictsThatDoNotClear(t *testing.T) {
	p := &requeue.Policy{ConflictDelay: 100 * time.Millisecond, MaxConflictDelay: time.Second}
	rec := &recorder{}
	ctx := logr.NewContext(t.Context(), rec.logger())
	exists := apierrors.NewAlreadyExists(widgets, "w")
	var delays []time.Duration
	for range requeue.ConflictsWorthAnError {
		res, err := p.Result(ctx, req("w"), ctrl.Result{}, exists)
		if err != nil {
			t.Fatalf("conflict returned an error: %v", err)
		}
		delays = append(delays, res.RequeueAfter)
	}
	wantDelays := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	for len(wantDelays) < requeue.ConflictsWorthAnError {
		wantDelays = append(wantDelays, time.Second)
	}
	if diff := cmp.Diff(wantDelays, delays); diff != "" {
		t.Errorf("delays of repeated conflicts (-want +got):\n%s", diff)
	}
	logged := rec.all()
	if last := logged[len(logged)-1]; !last.Error {
		t.Errorf("the %d-th conflict in a row logged %+v, want an error", requeue.ConflictsWorthAnError, last)
	}
	for _, e := range logged[:len(logged)-1] {
		if e.Error {
			t.Errorf("an early conflict was logged as an error: %+v", e)
		}
	}

	// Another request has its own count; a success resets this one.
	if res, _ := p.Result(ctx, req("other"), ctrl.Result{}, exists); res.RequeueAfter != 100*time.Millisecond {
		t.Errorf("first conflict of another request waits %v, want 100ms", res.RequeueAfter)
	}
	p.Result(ctx, req("w"), ctrl.Result{}, nil)
	if res, _ := p.Result(ctx, req("w"), ctrl.Result{}, exists); res.RequeueAfter != 100*time.Millisecond {
		t.Errorf("conflict after a success waits %v, want 100ms again", res.RequeueAfter)
	}
}
