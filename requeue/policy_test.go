package requeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
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
	p := requeue.Policy{Backoff: b, Observe: func(context.Context, requeue.Decision) {}}
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
	var seen []requeue.Decision
	p := requeue.Policy{Observe: func(_ context.Context, o requeue.Decision) { seen = append(seen, o) }}
	rec := &recorder{}
	ctx := logr.NewContext(t.Context(), rec.logger())
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	p.Result(ctx, req("w"), ctrl.Result{}, conflict)
	want := []requeue.Decision{{Request: req("w"), Class: errors.ClassConflict, Err: conflict, Result: ctrl.Result{RequeueAfter: requeue.DefaultConflictDelay}, Conflicts: 1}}
	if diff := cmp.Diff(want, seen, cmp.Comparer(func(a, b error) bool { return a == b }), cmpopts.IgnoreUnexported(requeue.Decision{})); diff != "" {
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

// TestPolicyReportsOnlyFailuresThatPersist proves Decision.Report: a
// permanent error at once; a transient or throttled one only once the
// request has been failing for ReportAfter with no success in between;
// never a conflict or a success; and that requests are judged apart.
func TestPolicyReportsOnlyFailuresThatPersist(t *testing.T) {
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	flaky := errors.New("flaky")
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	type step struct {
		at  time.Duration // since start
		req string
		err error
	}
	type verdict struct {
		Report       bool
		FailingSince time.Duration // since start; -1 for zero
	}
	tests := []struct {
		name        string
		reportAfter time.Duration
		steps       []step
		want        []verdict
	}{
		{"transient reported once it lasted the default 10s", 0,
			[]step{{0, "w", flaky}, {5 * time.Second, "w", flaky}, {10 * time.Second, "w", flaky}},
			[]verdict{{false, 0}, {false, 0}, {true, 0}}},
		{"a success ends the run", 0,
			[]step{{0, "w", flaky}, {9 * time.Second, "w", nil}, {10 * time.Second, "w", flaky}, {19 * time.Second, "w", throttled}, {20 * time.Second, "w", flaky}},
			[]verdict{{false, 0}, {false, -1}, {false, 10 * time.Second}, {false, 10 * time.Second}, {true, 10 * time.Second}}},
		{"a conflict neither starts nor ends a run", time.Second,
			[]step{{0, "w", conflict}, {time.Second, "w", flaky}, {1500 * time.Millisecond, "w", conflict}, {2 * time.Second, "w", flaky}},
			[]verdict{{false, -1}, {false, time.Second}, {false, -1}, {true, time.Second}}},
		{"permanent is reported at once and ends the run", 0,
			[]step{{0, "w", flaky}, {time.Second, "w", errors.Permanent(flaky)}, {2 * time.Second, "w", flaky}},
			[]verdict{{false, 0}, {true, 0}, {false, 2 * time.Second}}},
		{"requests are judged apart", time.Second,
			[]step{{0, "a", flaky}, {time.Second, "b", flaky}, {time.Second, "a", flaky}},
			[]verdict{{false, 0}, {false, time.Second}, {true, 0}}},
		{"negative ReportAfter reports every failure", -1,
			[]step{{0, "w", flaky}, {0, "w", throttled}, {0, "w", nil}},
			[]verdict{{true, 0}, {true, 0}, {false, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			p := requeue.Policy{ReportAfter: tt.reportAfter, Clock: clk, Observe: func(context.Context, requeue.Decision) {}}
			var got []verdict
			for _, s := range tt.steps {
				clk.SetTime(start.Add(s.at))
				d := p.Decide(t.Context(), req(s.req), ctrl.Result{}, s.err)
				v := verdict{Report: d.Report, FailingSince: d.FailingSince.Sub(start)}
				if d.FailingSince.IsZero() {
					v.FailingSince = -1
				}
				got = append(got, v)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyForgetsTheLeastRecentFailingRequestWhenFull proves the memory
// of failing requests is bounded by MaxTrackedRequests.
func TestPolicyForgetsTheLeastRecentFailingRequestWhenFull(t *testing.T) {
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	p := requeue.Policy{ReportAfter: time.Second, MaxTrackedRequests: 2, Clock: clk, Observe: func(context.Context, requeue.Decision) {}}
	flaky := errors.New("flaky")
	p.Decide(t.Context(), req("a"), ctrl.Result{}, flaky)
	p.Decide(t.Context(), req("b"), ctrl.Result{}, flaky)
	p.Decide(t.Context(), req("c"), ctrl.Result{}, flaky) // forgets a
	clk.SetTime(start.Add(time.Second))
	if d := p.Decide(t.Context(), req("a"), ctrl.Result{}, flaky); d.Report || !d.FailingSince.Equal(start.Add(time.Second)) {
		t.Errorf("a was remembered past the bound: %+v", d)
	}
	if d := p.Decide(t.Context(), req("c"), ctrl.Result{}, flaky); !d.Report {
		t.Errorf("c was forgotten although it is among the 2 most recent: %+v", d)
	}
}

// TestPolicyDecideWithDecidesOnce proves DecideWith records with the decision
// as it will stand, joins the record's error into it, and makes one decision
// only: one Observe call, one backoff step, one failing-since entry.
func TestPolicyDecideWithDecidesOnce(t *testing.T) {
	boom := errors.Transient(errors.New("boom"))
	refused := apierrors.NewServiceUnavailable("etcd is resting")
	tests := []struct {
		name       string
		err        error
		recordErr  error
		wantRecord errors.Class
		wantClass  errors.Class
		wantReport bool
	}{
		{"success recorded", nil, nil, errors.ClassNone, errors.ClassNone, false},
		{"success, record fails", nil, refused, errors.ClassNone, errors.ClassTransient, true},
		{"failure recorded", boom, nil, errors.ClassTransient, errors.ClassTransient, true},
		{"failure, record fails", boom, refused, errors.ClassTransient, errors.ClassTransient, true},
		{"permanent failure, record fails", errors.Permanent(errors.New("bad spec")), refused, errors.ClassPermanent, errors.ClassTransient, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var observed []requeue.Decision
			b := &requeue.Backoff{}
			p := &requeue.Policy{ReportAfter: -1, Backoff: b, Observe: func(_ context.Context, d requeue.Decision) { observed = append(observed, d) }}
			var recorded []requeue.Decision
			d := p.DecideWith(t.Context(), req("w"), ctrl.Result{}, tt.err, func(d requeue.Decision) error {
				recorded = append(recorded, d)
				return tt.recordErr
			})
			if len(recorded) != 1 || recorded[0].Class != tt.wantRecord || recorded[0].Err != tt.err {
				t.Errorf("record saw %+v, want one call with class %v and the reconcile's error", recorded, tt.wantRecord)
			}
			if len(observed) != 1 {
				t.Fatalf("Observe called %d times, want 1", len(observed))
			}
			if d.Class != tt.wantClass || d.Report != tt.wantReport || observed[0].Class != tt.wantClass {
				t.Errorf("decision class %v report %v (observed %v); want %v, %v", d.Class, d.Report, observed[0].Class, tt.wantClass, tt.wantReport)
			}
			for _, e := range []error{tt.err, tt.recordErr} {
				if e != nil && !errors.Is(d.Err, e) {
					t.Errorf("decision error %v lost %v", d.Err, e)
				}
			}
			wantSteps := 0
			if tt.wantClass == errors.ClassTransient {
				wantSteps = 1
			}
			if n := b.Failures(req("w")); n != wantSteps {
				t.Errorf("%d backoff steps, want %d", n, wantSteps)
			}
		})
	}
	var nilRecord requeue.Policy
	if d := nilRecord.DecideWith(t.Context(), req("w"), requeue.After(time.Minute), nil, nil); d.Result.RequeueAfter != time.Minute {
		t.Errorf("DecideWith without a record = %+v, want Decide's result", d.Result)
	}
}

// TestPolicyForgetDropsEverythingItRemembersOfARequest: a request that
// failed (a run of failures, a Backoff count) and conflicted (conflicts in
// a row) is remembered until Forget, which a reconcile.Loop calls when the
// object is gone; the gauge reconcilekit_requeue_entries counts what every
// Policy and Backoff of the process remembers.
func TestPolicyForgetDropsEverythingItRemembersOfARequest(t *testing.T) {
	gauge := func(m string) float64 {
		return metricstest.Settled(t, "reconcilekit_requeue_entries", map[string]string{"map": m})
	}
	failing0, backoff0 := gauge("failing"), gauge("backoff")
	p := &requeue.Policy{Backoff: &requeue.Backoff{}, Observe: func(context.Context, requeue.Decision) {}}
	flaky, conflict := errors.New("flaky"), apierrors.NewConflict(widgets, "w", errors.New("changed"))
	for i := range 100 {
		p.Decide(t.Context(), req(fmt.Sprint("failing-", i)), ctrl.Result{}, flaky)
		p.Decide(t.Context(), req(fmt.Sprint("conflicting-", i)), ctrl.Result{}, conflict)
	}
	if n := p.Len(); n != 200 {
		t.Errorf("Len = %d after 100 failing and 100 conflicting requests, want 200", n)
	}
	if f, b := gauge("failing")-failing0, gauge("backoff")-backoff0; f != 100 || b != 200 {
		t.Errorf("the gauge counts %v failing and %v in backoff, want 100 and 200 (100 failures, 100 conflicts)", f, b)
	}
	for i := range 100 {
		p.Forget(req(fmt.Sprint("failing-", i)))
		p.Forget(req(fmt.Sprint("conflicting-", i)))
	}
	if n, b := p.Len(), p.Backoff.Len(); n != 0 || b != 0 {
		t.Errorf("after Forget: Len %d, Backoff.Len %d; want 0 and 0", n, b)
	}
	if f, b := gauge("failing")-failing0, gauge("backoff")-backoff0; f != 0 || b != 0 {
		t.Errorf("after Forget the gauge counts %v failing and %v in backoff, want 0 and 0", f, b)
	}
	var nilPolicy *requeue.Policy
	nilPolicy.Forget(req("w")) // no panic
	if nilPolicy.Len() != 0 {
		t.Error("a nil Policy remembers something")
	}
}
