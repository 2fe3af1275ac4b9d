package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

var ignoreErr = cmpopts.IgnoreFields(rt.APIRequest{}, "Err")

// TestConvergePassesForIdempotentReconciler: a correct reconciler converges
// in one run on the fake client, its writes are reported, and the
// idempotency run finds nothing to do.
func TestConvergePassesForIdempotentReconciler(t *testing.T) {
	w := widget("ns", "w", "hello")
	var counter rt.Counter
	c := counter.Wrap(newFake(t, w))
	rec := &recorder{}

	rep := rt.Converge(rec, &widgetReconciler{Client: c}, requestFor(w), rt.WithCounter(&counter))

	wantNoFailure(t, rec)
	if rep.Runs != 1 {
		t.Errorf("Runs = %d, want 1", rep.Runs)
	}
	want := []rt.APIRequest{
		{Verb: rt.VerbCreate, Kind: "ConfigMap", Namespace: "ns", Name: "w-config"},
		{Verb: rt.VerbStatusUpdate, Kind: "Widget", Namespace: "ns", Name: "w"},
	}
	if diff := cmp.Diff(want, rep.Writes()); diff != "" {
		t.Errorf("writes while converging (-want +got):\n%s", diff)
	}
	// The idempotency run read, but did not write.
	if got := counter.Count(rt.VerbGet, "Widget"); got != 2 {
		t.Errorf("gets of Widget = %d, want 2 (one per run)", got)
	}
	if got := len(counter.Writes()); got != 2 {
		t.Errorf("writes in total = %d, want 2: the idempotency run must not write", got)
	}
	var got testapi.Widget
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "Ready" {
		t.Errorf("status.phase = %q, want Ready", got.Status.Phase)
	}
}

// TestConvergeFailsForReconcilerThatWritesEveryTime: the helper catches the
// classic bugs, reporting each write and what it changed.
func TestConvergeFailsForReconcilerThatWritesEveryTime(t *testing.T) {
	tests := []struct {
		name      string
		bug       bug
		wantParts []string
	}{
		{
			name: "unconditional status update",
			bug:  statusEveryTime,
			wantParts: []string{
				`"ns/w" is not idempotent`,
				"converged after 1 run(s)",
				"it wrote 1 time(s)",
				`1. update/status Widget "ns/w"`,
				"no change to the stored object (the write was not needed)",
			},
		},
		{
			name: "annotation that changes every run",
			bug:  annotateEveryTime,
			wantParts: []string{
				`"ns/w" is not idempotent`,
				`1. patch Widget "ns/w"`,
				`application/merge-patch+json patch: {"metadata":{"annotations":{"example.com/runs":"2"}}}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := widget("ns", "w", "hello")
			var counter rt.Counter
			r := &buggyReconciler{Client: counter.Wrap(newFake(t, w)), bug: tt.bug}
			rec := &recorder{}

			rt.Converge(rec, r, requestFor(w), rt.WithCounter(&counter))

			wantFailure(t, rec, tt.wantParts...)
		})
	}
}

// TestConvergeStepsTheClockForRequeueAfter: a reconciler waiting for a time
// converges once Converge has stepped the caller's fake clock (StepClock)
// there, and the clock ends exactly at that time.
func TestConvergeStepsTheClockForRequeueAfter(t *testing.T) {
	w := widget("ns", "w", "")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	var counter rt.Counter
	r := &waitReconciler{Client: counter.Wrap(newFake(t, w)), clock: clk, at: start.Add(10 * time.Minute)}
	rec := &recorder{}

	rep := rt.Converge(rec, r, requestFor(w), rt.WithCounter(&counter), rt.StepClock(clk))

	wantNoFailure(t, rec)
	if rep.Runs != 2 {
		t.Errorf("Runs = %d, want 2 (wait, then act)", rep.Runs)
	}
	if got, want := clk.Now(), start.Add(10*time.Minute); !got.Equal(want) {
		t.Errorf("clock = %v, want %v", got, want)
	}
}

// TestConvergeFailsWhenItNeverConverges: without the clock the waiting
// reconciler asks to be requeued forever; Converge stops at MaxRuns and
// shows the last runs.
func TestConvergeFailsWhenItNeverConverges(t *testing.T) {
	w := widget("ns", "w", "")
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var counter rt.Counter
	r := &waitReconciler{Client: counter.Wrap(newFake(t, w)), clock: clk, at: clk.Now().Add(time.Hour)}
	rec := &recorder{}

	rt.Converge(rec, r, requestFor(w), rt.WithCounter(&counter), rt.MaxRuns(7))

	wantFailure(t, rec, `"ns/w" did not converge within 7 runs`, "run 7: requeue after 1h0m0s; no writes", "run 3:")
	if got := counter.Count(rt.VerbGet, "Widget"); got != 7 {
		t.Errorf("runs = %d, want 7", got)
	}
}

// TestConvergeOutcomes covers what each kind of return value does.
func TestConvergeOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name     string
		f        funcReconciler
		opts     []rt.Option
		wantRuns int // runs made in total, idempotency run included
		// wantFailure lists parts of the one expected failure; nil means
		// Converge must pass.
		wantFailure []string
		wantReport  rt.Report
	}{
		{
			name:       "errors are retried until the run succeeds",
			f:          func(n int) (reconcile.Result, error) { return reconcile.Result{}, errorIf(n <= 3, errBoom) },
			wantRuns:   5,
			wantReport: rt.Report{Runs: 4, Errors: []error{errBoom, errBoom, errBoom}},
		},
		{
			name:       "a result that only sets Priority does not requeue, so it converges",
			f:          func(n int) (reconcile.Result, error) { return reconcile.Result{Priority: ptr.To(5)}, nil },
			wantRuns:   2,
			wantReport: rt.Report{Runs: 1, Result: reconcile.Result{Priority: ptr.To(5)}},
		},
		{
			name:        "more errors in a row than MaxErrors fail",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, errorIf(n <= 3, errBoom) },
			opts:        []rt.Option{rt.MaxErrors(2)},
			wantRuns:    3,
			wantFailure: []string{"3 runs in a row failed (MaxErrors is 2)", "run 3: error boom"},
		},
		{
			name:        "MaxErrors(0) fails on the first error",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, errBoom },
			opts:        []rt.Option{rt.MaxErrors(0)},
			wantRuns:    1,
			wantFailure: []string{"1 runs in a row failed"},
		},
		{
			name:        "a terminal error fails by default",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, reconcile.TerminalError(errBoom) },
			wantRuns:    1,
			wantFailure: []string{"run 1 returned a terminal error", "AllowTerminalError()"},
		},
		{
			name:       "a terminal error ends the loop when allowed",
			f:          func(n int) (reconcile.Result, error) { return reconcile.Result{}, reconcile.TerminalError(errBoom) },
			opts:       []rt.Option{rt.AllowTerminalError()},
			wantRuns:   2,
			wantReport: rt.Report{Runs: 1, Err: reconcile.TerminalError(errBoom)},
		},
		{
			name: "a terminal error that goes away on the next run is reported",
			f: func(n int) (reconcile.Result, error) {
				return reconcile.Result{}, errorIf(n == 1, reconcile.TerminalError(errBoom))
			},
			opts:        []rt.Option{rt.AllowTerminalError()},
			wantRuns:    2,
			wantFailure: []string{"returned no error, but the converging run ended with the terminal error"},
		},
		{
			name:        "a periodic requeue never converges without Resync",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{RequeueAfter: 10 * time.Minute}, nil },
			opts:        []rt.Option{rt.MaxRuns(3)},
			wantRuns:    3,
			wantFailure: []string{"did not converge within 3 runs"},
		},
		{
			name:       "Resync accepts a periodic requeue as converged",
			f:          func(n int) (reconcile.Result, error) { return reconcile.Result{RequeueAfter: 10 * time.Minute}, nil },
			opts:       []rt.Option{rt.Resync(10 * time.Minute)},
			wantRuns:   2,
			wantReport: rt.Report{Runs: 1, Result: reconcile.Result{RequeueAfter: 10 * time.Minute}},
		},
		{
			name:        "Resync does not accept a shorter requeue",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Minute}, nil },
			opts:        []rt.Option{rt.Resync(10 * time.Minute), rt.MaxRuns(2)},
			wantRuns:    2,
			wantFailure: []string{"did not converge within 2 runs"},
		},
		{
			name: "the deprecated Requeue flag runs again",
			f: func(n int) (reconcile.Result, error) {
				return reconcile.Result{Requeue: n < 3}, nil //nolint:staticcheck // proving the deprecated field is honoured
			},
			wantRuns:   4,
			wantReport: rt.Report{Runs: 3},
		},
		{
			name: "asking to be requeued after converging is reported",
			f: func(n int) (reconcile.Result, error) {
				if n == 2 {
					return reconcile.Result{RequeueAfter: time.Second}, nil
				}
				return reconcile.Result{}, nil
			},
			wantRuns:    2,
			wantFailure: []string{"converged after 1 run(s)", "it asked to be requeued again (requeue after 1s)"},
		},
		{
			name:        "failing after converging is reported",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, errorIf(n == 2, errBoom) },
			wantRuns:    2,
			wantFailure: []string{"it failed: boom"},
		},
		{
			name:        "by default DefaultMaxRuns runs are allowed",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Second}, nil },
			wantRuns:    rt.DefaultMaxRuns,
			wantFailure: []string{fmt.Sprintf("did not converge within %d runs", rt.DefaultMaxRuns)},
		},
		{
			name:        "by default DefaultMaxErrors failed runs in a row are retried",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, errBoom },
			wantRuns:    rt.DefaultMaxErrors + 1,
			wantFailure: []string{fmt.Sprintf("%d runs in a row failed (MaxErrors is %d)", rt.DefaultMaxErrors+1, rt.DefaultMaxErrors)},
		},
		{
			name:        "MaxRuns below 1 is refused",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, nil },
			opts:        []rt.Option{rt.MaxRuns(0)},
			wantRuns:    0,
			wantFailure: []string{"MaxRuns(0): need at least 1"},
		},
		{
			name:        "negative MaxErrors is refused",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, nil },
			opts:        []rt.Option{rt.MaxErrors(-1)},
			wantFailure: []string{"MaxErrors(-1)"},
		},
		{
			name:        "negative Resync is refused",
			f:           func(n int) (reconcile.Result, error) { return reconcile.Result{}, nil },
			opts:        []rt.Option{rt.Resync(-time.Second)},
			wantFailure: []string{"Resync(-1s)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter rt.Counter
			r := &countingFunc{f: tt.f}
			rec := &recorder{}

			rep := rt.Converge(rec, r, reconcile.Request{}, append([]rt.Option{rt.WithCounter(&counter)}, tt.opts...)...)

			if r.runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", r.runs, tt.wantRuns)
			}
			if tt.wantFailure == nil {
				wantNoFailure(t, rec)
				if diff := cmp.Diff(tt.wantReport, rep, cmpopts.EquateErrors(), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("report (-want +got):\n%s", diff)
				}
				return
			}
			wantFailure(t, rec, tt.wantFailure...)
		})
	}
}

// TestConvergeRequiresCounter: forgetting WithCounter is a clear failure,
// not a check that silently passes.
func TestConvergeRequiresCounter(t *testing.T) {
	r := &countingFunc{f: func(int) (reconcile.Result, error) { return reconcile.Result{}, nil }}
	rec := &recorder{}
	rt.Converge(rec, r, reconcile.Request{})
	wantFailure(t, rec, "needs WithCounter(c)")
	if r.runs != 0 {
		t.Errorf("runs = %d, want 0", r.runs)
	}
	rec = &recorder{}
	rt.Converge(rec, nil, reconcile.Request{}, rt.WithCounter(&rt.Counter{}))
	wantFailure(t, rec, "needs a reconciler, got nil")
}

// TestConvergeLogsRetriedErrors: retried errors are visible in the test
// log, so a slow-converging reconciler is explainable.
func TestConvergeLogsRetriedErrors(t *testing.T) {
	r := &countingFunc{f: func(n int) (reconcile.Result, error) { return reconcile.Result{}, errorIf(n == 1, errors.New("boom")) }}
	rec := &recorder{}
	rt.Converge(rec, r, reconcile.Request{}, rt.WithCounter(&rt.Counter{}))
	wantNoFailure(t, rec)
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "run 1 failed, retrying: boom") {
		t.Errorf("logs = %q, want one line about run 1 failing", rec.logs)
	}
}

// TestConvergeWithFaultsConvergesAndPausesFaultsForTheCheck: a correct
// reconciler converges through injected faults, and the idempotency run
// sees no faults (the injector's count does not move during it).
func TestConvergeWithFaultsConvergesAndPausesFaultsForTheCheck(t *testing.T) {
	w := widget("ns", "w", "hello")
	faults, err := rt.NewFaultInjector(7, rt.Rate(0.4))
	if err != nil {
		t.Fatal(err)
	}
	var counter rt.Counter
	c := counter.Wrap(faults.Wrap(newFake(t, w)))
	rec := &recorder{}

	rep := rt.Converge(rec, &widgetReconciler{Client: c}, requestFor(w), rt.WithCounter(&counter), rt.WithFaults(faults))

	wantNoFailure(t, rec)
	if len(rep.Errors) == 0 || len(faults.Injected()) == 0 {
		t.Fatalf("errors = %d, injected = %d: want the faults to have hit the reconciler", len(rep.Errors), len(faults.Injected()))
	}
	// Every request the idempotency run made came after the report's.
	check := counter.Requests()[len(rep.Requests):]
	if len(check) == 0 {
		t.Fatal("no idempotency run recorded")
	}
	for _, r := range check {
		if r.Err != nil {
			t.Errorf("idempotency run request %s failed; faults must be paused", r)
		}
	}
	// Faults are active again afterwards: 40% of many requests fail.
	before := len(faults.Injected())
	for range 50 {
		_ = c.Get(t.Context(), client.ObjectKeyFromObject(w), &testapi.Widget{})
	}
	if len(faults.Injected()) == before {
		t.Error("no faults after Converge returned; want injection resumed")
	}
	var cm corev1.ConfigMap
	if err := newFakeView(t, c, "ns", "w-config", &cm); err != nil {
		t.Fatalf("config map not created: %v", err)
	}
}

// newFakeView reads through c, retrying injected faults.
func newFakeView(t *testing.T, c client.Client, ns, name string, obj client.Object) error {
	t.Helper()
	var err error
	for range 20 {
		if err = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err == nil {
			return nil
		}
	}
	return err
}

func errorIf(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}

// flipReconciler removes the annotation example.com/flip when present and
// adds it when absent, by Update: it never converges.
type flipReconciler struct{ client.Client }

func (r *flipReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, err
	}
	if _, ok := w.Annotations["example.com/flip"]; ok {
		delete(w.Annotations, "example.com/flip")
	} else {
		metav1.SetMetaDataAnnotation(&w.ObjectMeta, "example.com/flip", "on")
	}
	return reconcile.Result{}, r.Update(ctx, &w)
}

// TestConvergeReportsWhatAnUpdateAdds: the failure shows the field an
// update adds, compared with a fresh read of the stored object (a read into
// a copy of the sent object would merge the new annotation in and hide it).
func TestConvergeReportsWhatAnUpdateAdds(t *testing.T) {
	w := widget("ns", "w", "")
	w.Annotations = map[string]string{"example.com/flip": "on"}
	var counter rt.Counter
	rec := &recorder{}

	rt.Converge(rec, &flipReconciler{Client: counter.Wrap(newFake(t, w))}, requestFor(w), rt.WithCounter(&counter))

	wantFailure(t, rec, `1. update Widget "ns/w"`, "changes (-stored +sent)", `"example.com/flip"`)
}
