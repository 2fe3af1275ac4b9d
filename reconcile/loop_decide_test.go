package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

var widgetsResource = schema.GroupResource{Group: "testing.reconcilekit.io", Resource: "widgets"}

func drainEvents(rec *events.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-rec.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

func statusWrites(rs []reconciletest.APIRequest) int {
	n := 0
	for _, r := range rs {
		if strings.HasSuffix(string(r.Verb), "/status") && r.Verb.IsWrite() && r.Err == nil {
			n++
		}
	}
	return n
}

// TestLoopDecidesAConflictTheSameWayOnEveryPath proves an error's meaning is
// decided once: a conflict while cleaning up leaves the conditions alone and
// writes nothing, exactly as a conflict from Sync does (it used to mark the
// object Reconciling), and goes through the Policy like every outcome.
func TestLoopDecidesAConflictTheSameWayOnEveryPath(t *testing.T) {
	c := env.Client(t)
	var counter reconciletest.Counter
	var decisions []requeue.Decision
	fin := &finalizer.Registry[*testapi.Widget]{}
	conflicting := true
	if err := fin.Register("testing.reconcilekit.io/conflicting", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		if conflicting {
			return apierrors.NewConflict(widgetsResource, "w", fmt.Errorf("the object has been modified"))
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	loop := reconcile.New(counter.Wrap(c), "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) { return reconcile.Progress{}, nil })
	loop.Finalizers = fin
	loop.Policy = &requeue.Policy{ReportAfter: -1, Observe: func(_ context.Context, d requeue.Decision) {
		decisions = append(decisions, d)
	}}
	req := createWidget(t, c, env.Namespace(t), "conflict")
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	if err := c.Delete(t.Context(), getWidget(t, c, req)); err != nil {
		t.Fatal(err)
	}

	counter.Reset()
	decisions = nil
	res, err := loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter <= 0 {
		t.Errorf("a conflicting cleanup returned %+v, %v; want a quiet requeue", res, err)
	}
	if w := counter.Writes(); len(w) != 0 {
		t.Errorf("a conflicting cleanup wrote %v, want nothing", w)
	}
	if w := getWidget(t, c, req); !status.IsTrue(w, status.TypeReady) || status.IsTrue(w, status.TypeReconciling) {
		t.Errorf("a conflicting cleanup changed the conditions: %+v", w.Status.Conditions)
	}
	if len(decisions) != 1 || decisions[0].Class != errors.ClassConflict || decisions[0].Report {
		t.Errorf("decisions = %+v, want one unreported conflict", decisions)
	}
	conflicting = false
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}

// TestLoopSendsTheDeletionRaceThroughThePolicy proves the Loop never
// returns past its Policy: when deletion begins between the read and the
// finalizer patch, the immediate requeue is a decision Observe sees.
func TestLoopSendsTheDeletionRaceThroughThePolicy(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Finalizers: []string{"testing.reconcilekit.io/keep"}}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	// Deletion begins just before the loop's finalizer patch.
	var deleted atomic.Bool
	racing, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	racing = interceptor.NewClient(racing, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if deleted.CompareAndSwap(false, true) {
				if err := c.Delete(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}); err != nil {
					return err
				}
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	fin := &finalizer.Registry[*testapi.Widget]{}
	if err := fin.Register("testing.reconcilekit.io/cleanup", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error { return nil })); err != nil {
		t.Fatal(err)
	}
	var decisions []requeue.Decision
	loop := reconcile.New(racing, "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
		t.Error("Sync ran for an object being deleted")
		return reconcile.Progress{}, nil
	})
	loop.Finalizers = fin
	loop.Policy = &requeue.Policy{Observe: func(_ context.Context, d requeue.Decision) { decisions = append(decisions, d) }}
	res, err := loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != requeue.MinDelay {
		t.Errorf("Reconcile = %+v, %v; want an immediate requeue to run the cleanups", res, err)
	}
	if len(decisions) != 1 || decisions[0].Err != nil || decisions[0].Result.RequeueAfter != requeue.MinDelay {
		t.Errorf("decisions = %+v, want the immediate requeue decided by the Policy", decisions)
	}
}

// TestLoopStallsWithTheReasonSyncGave proves a permanent error can carry its
// own reason to the conditions and the event.
func TestLoopStallsWithTheReasonSyncGave(t *testing.T) {
	f, c := newLoopFixture(t)
	rec := events.NewFakeRecorder(8)
	f.loop.Recorder = rec
	req := createWidget(t, c, env.Namespace(t), "x")
	f.failWith(errors.Permanent(errors.WithReason(errors.New("spec.message must be a greeting"), "InvalidSpec")))
	if _, err := f.loop.Reconcile(t.Context(), req); !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Fatalf("error = %v, want terminal", err)
	}
	stalled, _ := status.FindCondition(getWidget(t, c, req), status.TypeStalled)
	if stalled.Reason != "InvalidSpec" || stalled.Message != "spec.message must be a greeting" {
		t.Errorf("Stalled = %s: %s, want InvalidSpec: spec.message must be a greeting", stalled.Reason, stalled.Message)
	}
	if got := drainEvents(rec); len(got) != 1 || !strings.HasPrefix(got[0], "Warning InvalidSpec") {
		t.Errorf("events = %q, want one Warning InvalidSpec", got)
	}
}

// TestLoopDoesNotFlapConditionsOnAPassingTransientError proves one transient
// failure followed by a success costs no status write and no event: it is
// reported only once it persists (Policy.ReportAfter, 10s by default).
func TestLoopDoesNotFlapConditionsOnAPassingTransientError(t *testing.T) {
	f, c := newLoopFixture(t)
	rec := events.NewFakeRecorder(8)
	f.loop.Recorder = rec
	req := createWidget(t, c, env.Namespace(t), "steady")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	drainEvents(rec)

	f.counter.Reset()
	f.failWith(apierrors.NewServiceUnavailable("etcd leader changed"))
	if _, err := f.loop.Reconcile(t.Context(), req); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error = %v, want the transient error back for a retry", err)
	}
	f.failWith(nil)
	if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if w := f.counter.Writes(); len(w) != 0 {
		t.Errorf("a transient failure that passed wrote %v, want nothing", w)
	}
	if got := drainEvents(rec); len(got) != 0 {
		t.Errorf("a transient failure that passed recorded %q, want no event", got)
	}
}

// TestLoopStatusWritesUnderFaultsStayNearTheFaultFreeCount converges the
// same objects without faults and with 20% of the loop's requests failing
// (server errors, throttling, timeouts): transient failures must not cost a
// status write each way, so the status writes stay within 1.25 times the
// fault-free count.
func TestLoopStatusWritesUnderFaultsStayNearTheFaultFreeCount(t *testing.T) {
	const objects = 40
	converge := func(t *testing.T, faults *reconciletest.FaultInjector) int {
		c := env.Client(t)
		ns := env.Namespace(t)
		var counter reconciletest.Counter
		inner := client.Client(c)
		if faults != nil {
			inner = faults.Wrap(c)
		}
		fin := &finalizer.Registry[*testapi.Widget]{}
		if err := fin.Register("testing.reconcilekit.io/cleanup", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error { return nil })); err != nil {
			t.Fatal(err)
		}
		loop := reconcile.New(counter.Wrap(inner), "loop-test", func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
			// A dependency read that may fail, then progress in two steps.
			if err := counter.Wrap(inner).Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); err != nil {
				return reconcile.Progress{}, err
			}
			if w.Status.Phase == "" {
				w.Status.Phase = "started"
				return reconcile.Progress{State: reconcile.InProgress, Reason: "Starting", Requeue: ctrl.Result{RequeueAfter: time.Millisecond}}, nil
			}
			w.Status.Phase = "done"
			return reconcile.Progress{}, nil
		})
		loop.APIReader = c
		loop.Finalizers = fin
		loop.Policy = &requeue.Policy{Observe: func(context.Context, requeue.Decision) {}}
		writes := 0
		for i := range objects {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%d", i)}}
			if err := c.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
			opts := []reconciletest.Option{reconciletest.WithCounter(&counter), reconciletest.MaxErrors(50), reconciletest.MaxRuns(200)}
			if faults != nil {
				opts = append(opts, reconciletest.WithFaults(faults))
			}
			rep := reconciletest.Converge(t, loop, req, opts...)
			writes += statusWrites(rep.Requests)
			if got := getWidget(t, c, req); got.Status.Phase != "done" || !status.IsTrue(got, status.TypeReady) {
				t.Fatalf("%s did not converge: phase %q, conditions %+v", req, got.Status.Phase, got.Status.Conditions)
			}
		}
		return writes
	}
	clean := converge(t, nil)
	faults, err := reconciletest.NewFaultInjector(7, reconciletest.Rate(0.2, reconciletest.FaultServerError, reconciletest.FaultThrottle, reconciletest.FaultTimeout))
	if err != nil {
		t.Fatal(err)
	}
	faulty := converge(t, faults)
	t.Logf("status writes for %d objects: %d without faults, %d with 20%% faults (%d injected)", objects, clean, faulty, len(faults.Injected()))
	if len(faults.Injected()) < objects {
		t.Fatalf("only %d faults were injected: the test proves nothing", len(faults.Injected()))
	}
	if float64(faulty) > 1.25*float64(clean) {
		t.Errorf("status writes with 20%% faults = %d, more than 1.25 × the %d without", faulty, clean)
	}
}

// TestLoopSyncReportsProgressAndWhenToRunAgain proves Sync's Progress is
// what the conditions say, and its Requeue is what the Loop returns.
func TestLoopSyncReportsProgressAndWhenToRunAgain(t *testing.T) {
	f, c := newLoopFixture(t)
	// A clock that stands still: the requeue is Sync's to the nanosecond.
	f.loop.Clock = clocktesting.NewFakePassiveClock(time.Now())
	req := createWidget(t, c, env.Namespace(t), "p")
	replicas := 1
	f.sync = func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		if replicas < 3 {
			return reconcile.Progress{State: reconcile.InProgress, Reason: "ScalingUp",
				Message: fmt.Sprintf("%d of 3 replicas ready", replicas), Requeue: ctrl.Result{RequeueAfter: 5 * time.Second}}, nil
		}
		return reconcile.Progress{Reason: "Scaled", Message: "3 of 3 replicas ready"}, nil
	}
	res, err := f.loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != 5*time.Second {
		t.Fatalf("Reconcile = %+v, %v; want Progress.Requeue (5s)", res, err)
	}
	w := getWidget(t, c, req)
	rc, _ := status.FindCondition(w, status.TypeReconciling)
	if rc.Reason != "ScalingUp" || rc.Message != "1 of 3 replicas ready" || !status.IsUnknown(w, status.TypeReady) {
		t.Errorf("conditions = %+v, want Reconciling ScalingUp with the child's count and Ready Unknown", w.Status.Conditions)
	}
	replicas = 3
	if res, err := f.loop.Reconcile(t.Context(), req); err != nil || !res.IsZero() {
		t.Fatalf("Reconcile = %+v, %v; want done", res, err)
	}
	ready, _ := status.FindCondition(getWidget(t, c, req), status.TypeReady)
	if ready.Status != metav1.ConditionTrue || ready.Reason != "Scaled" {
		t.Errorf("Ready = %+v, want True Scaled", ready)
	}
}

// TestLoopRequeuesAtTheInstantSyncAskedForHoweverLongTheStatusWriteTook
// proves that a requeue Sync returns counts from Sync's return: a status
// write that takes 300 ms (by the Loop's clock) is taken off a 5 s requeue,
// so that a Sync returning requeue.At(t) runs again at t; a Sync that asked
// for no requeue still gets none.
func TestLoopRequeuesAtTheInstantSyncAskedForHoweverLongTheStatusWriteTook(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "p")
	clk := clocktesting.NewFakePassiveClock(time.Now())
	fin := f.loop.Finalizers
	f.loop = reconcile.New(interceptor.NewClient(env.Client(t), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			clk.SetTime(clk.Now().Add(300 * time.Millisecond)) // the write takes 300 ms
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}), "loop-test", f.syncWidget)
	f.loop.Finalizers = fin
	f.loop.Clock = clk
	due := clk.Now().Add(5 * time.Second)
	f.sync = func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		if clk.Now().Before(due) {
			return reconcile.Progress{State: reconcile.InProgress, Reason: "Waiting", Requeue: requeue.At(due, requeue.WithClock(clk))}, nil
		}
		return reconcile.Progress{Reason: "Due"}, nil
	}
	res, err := f.loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != 4700*time.Millisecond {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after 4.7s, at the instant Sync asked for", res, err)
	}
	clk.SetTime(due)
	if res, err := f.loop.Reconcile(t.Context(), req); err != nil || !res.IsZero() {
		t.Fatalf("Reconcile at the due time = %+v, %v; want no requeue", res, err)
	}
}

// TestLoopEventPolicies proves the default records one Normal event for a
// successful lifecycle (on becoming Ready) and Warnings always, and that
// EventsOnTransitions records every transition.
func TestLoopEventPolicies(t *testing.T) {
	lifecycle := []reconcile.Progress{
		{State: reconcile.InProgress, Reason: "Scheduled"},
		{State: reconcile.InProgress, Reason: "Running"},
		{Reason: "Finished"},
		{State: reconcile.Failed, Reason: "Broke"},
	}
	tests := []struct {
		events reconcile.Events
		want   []string
	}{
		{reconcile.EventsOnReadyAndWarnings, []string{"Normal Finished", "Warning Broke"}},
		{reconcile.EventsOnTransitions, []string{"Normal Scheduled", "Normal Running", "Normal Finished", "Warning Broke"}},
		{reconcile.EventsWarningsOnly, []string{"Warning Broke"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.events), func(t *testing.T) {
			f, c := newLoopFixture(t)
			rec := events.NewFakeRecorder(16)
			f.loop.Recorder = rec
			f.loop.Events = tt.events
			req := createWidget(t, c, env.Namespace(t), "e")
			for _, p := range lifecycle {
				f.sync = func(context.Context, *testapi.Widget) (reconcile.Progress, error) { return p, nil }
				for range 2 { // the second is a resync: no event
					if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
						t.Fatal(err)
					}
				}
			}
			var got []string
			for _, e := range drainEvents(rec) {
				fields := strings.Fields(e)
				got = append(got, fields[0]+" "+fields[1])
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLoopRecordsNoEventWhileAReadyObjectOnlyChangesItsMessage: an object
// that becomes Ready and is then resized 5 times, its Ready message
// carrying the replica count, records one event by default (it became
// Ready), none for the resizes: it stayed Ready. EventsOnTransitions still
// records every change of the summary.
func TestLoopRecordsNoEventWhileAReadyObjectOnlyChangesItsMessage(t *testing.T) {
	for _, tt := range []struct {
		events reconcile.Events
		want   int
	}{
		{reconcile.EventsOnReadyAndWarnings, 1},
		{reconcile.EventsOnTransitions, 6},
	} {
		t.Run(fmt.Sprint(tt.events), func(t *testing.T) {
			f, c := newLoopFixture(t)
			rec := events.NewFakeRecorder(16)
			f.loop.Recorder = rec
			f.loop.Events = tt.events
			req := createWidget(t, c, env.Namespace(t), "resized")
			for replicas := 1; replicas <= 6; replicas++ {
				f.sync = func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
					return reconcile.Progress{Reason: "Deployed", Message: fmt.Sprintf("serving with %d replicas", replicas)}, nil
				}
				if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				ready, _ := status.FindCondition(getWidget(t, c, req), status.TypeReady)
				if want := fmt.Sprintf("serving with %d replicas", replicas); ready.Message != want {
					t.Fatalf("Ready message %q, want %q: the conditions must still follow", ready.Message, want)
				}
			}
			if got := drainEvents(rec); len(got) != tt.want {
				t.Errorf("%d events, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}

// valueWidget implements reconcile.Object by value: a Loop cannot make a
// new one to read into.
type valueWidget struct{ *testapi.Widget }

func TestLoopRefusesANonPointerTypeAtSetup(t *testing.T) {
	l := reconcile.New(env.Client(t), "loop-test", func(context.Context, valueWidget) (reconcile.Progress, error) { return reconcile.Progress{}, nil })
	if err := l.Validate(); !errors.Is(err, reconcile.ErrInvalidLoop) || !strings.Contains(err.Error(), "not a pointer") {
		t.Errorf("Validate = %v, want ErrInvalidLoop naming the type", err)
	}
	if _, err := l.Reconcile(t.Context(), crreconcile.Request{}); !errors.Is(err, reconcile.ErrInvalidLoop) || !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Errorf("Reconcile = %v, want ErrInvalidLoop as a terminal error, not a panic", err)
	}
}

// TestLoopRecordsNoEventWhenAStaleWriteFindsNothingToChange proves an event
// is recorded only when a status write changed the summary: a reconcile of
// a stale copy (here without the freshness guard's memory, as after a
// restart) computes Ready over an old status, its patch is refused (409),
// the writer re-reads and finds the server already Ready: no write, no
// event.
func TestLoopRecordsNoEventWhenAStaleWriteFindsNothingToChange(t *testing.T) {
	c := env.Client(t)
	req := createWidget(t, c, env.Namespace(t), "same")
	stale := getWidget(t, c, req) // before the first reconcile: no conditions
	newLoop := func(cl client.Client, rec events.EventRecorder) *reconcile.Loop[*testapi.Widget] {
		loop := reconcile.New(cl, "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
			w.Status.Phase = w.Spec.Message
			return reconcile.Progress{Reason: "Said"}, nil
		})
		loop.Recorder = rec
		loop.Policy = &requeue.Policy{Observe: func(context.Context, requeue.Decision) {}}
		return loop
	}
	first := events.NewFakeRecorder(4)
	if _, err := newLoop(c, first).Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n := len(first.Events); n != 1 {
		t.Fatalf("the first reconcile recorded %d events, want 1 (Ready)", n)
	}

	var counter reconciletest.Counter
	lagging := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if w, ok := obj.(*testapi.Widget); ok && key == req.NamespacedName {
				stale.DeepCopyInto(w)
				return nil
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	})
	second := events.NewFakeRecorder(4)
	loop := newLoop(counter.Wrap(lagging), second)
	loop.APIReader = c // the writer's re-read after the conflict sees the server
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var refused, accepted int
	for _, r := range counter.Requests() {
		if r.Verb.IsWrite() {
			if r.Err != nil {
				refused++
			} else {
				accepted++
			}
		}
	}
	if refused != 1 || accepted != 0 {
		t.Fatalf("status writes: %d refused, %d accepted; want the stale patch refused and nothing written after the re-read", refused, accepted)
	}
	if got := drainEvents(second); len(got) != 0 {
		t.Errorf("a reconcile that changed nothing recorded %q, want no event", got)
	}
}

// TestLoopFirstStatusWithinSkipsOnlyAStatusTheNextReconcileReplaces proves
// FirstStatusWithin: a new object's in-progress status is not written when
// the requeue comes within the window after its creation; anything else is
// written at once (a requeue past the window, Done, an object that already
// shows a summary, a clock that reads the object as not new).
func TestLoopFirstStatusWithinSkipsOnlyAStatusTheNextReconcileReplaces(t *testing.T) {
	inProgress := func(after time.Duration) reconcile.Progress {
		return reconcile.Progress{State: reconcile.InProgress, Reason: "Waiting", Requeue: ctrl.Result{RequeueAfter: after}}
	}
	tests := []struct {
		name      string
		age       time.Duration // of the object, by the loop's clock
		shown     bool          // the object already has a summary
		progress  reconcile.Progress
		wantWrite bool
	}{
		{"due within the window: skipped", time.Second, false, inProgress(3 * time.Second), false},
		{"due after the window: written", time.Second, false, inProgress(20 * time.Second), true},
		{"old object: written", 9 * time.Second, false, inProgress(3 * time.Second), true},
		{"already shown: written", time.Second, true, inProgress(3 * time.Second), true},
		{"done: written", time.Second, false, reconcile.Progress{}, true},
		{"no requeue: written", time.Second, false, inProgress(0), true},
		{"clock behind the server: written", -time.Minute, false, inProgress(3 * time.Second), true},
		{"requeue that saturates Duration: written", time.Second, false, inProgress(time.Duration(1<<63 - 1)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newLoopFixture(t)
			req := createWidget(t, c, env.Namespace(t), "s")
			w := getWidget(t, c, req)
			if tt.shown {
				status.MarkReconciling(w, "Earlier", "")
				if err := c.Status().Update(t.Context(), w); err != nil {
					t.Fatal(err)
				}
			}
			f.loop.FirstStatusWithin = 10 * time.Second
			f.loop.Clock = clocktesting.NewFakePassiveClock(w.CreationTimestamp.Add(tt.age))
			f.sync = func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
				w.Status.Phase = "working"
				return tt.progress, nil
			}
			res, err := f.loop.Reconcile(t.Context(), req)
			if err != nil || res != tt.progress.Requeue {
				t.Fatalf("Reconcile = %+v, %v; want %+v", res, err, tt.progress.Requeue)
			}
			wrote := statusWrites(f.counter.Requests()) > 0
			if wrote != tt.wantWrite {
				t.Errorf("status written = %v, want %v", wrote, tt.wantWrite)
			}
		})
	}
}

// TestLoopDecidesOnceWhenTheStatusWriteFails proves a failed status write
// joins the reconcile's one decision: exactly one Observe call, one backoff
// step, and an outcome that carries both Sync's error and the write's, on
// the success path and when Sync's own failure is being reported.
func TestLoopDecidesOnceWhenTheStatusWriteFails(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is resting")
	for name, syncErr := range map[string]error{
		"sync succeeded": nil,
		"sync failed":    errors.Transient(errors.New("the registry is down")),
	} {
		t.Run(name, func(t *testing.T) {
			base := env.Client(t)
			failing := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
				SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
					return unavailable
				},
			})
			var decisions []requeue.Decision
			backoff := &requeue.Backoff{}
			loop := reconcile.New(failing, "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
				return reconcile.Progress{}, syncErr
			})
			loop.Policy = &requeue.Policy{ReportAfter: -1, Backoff: backoff, Observe: func(_ context.Context, d requeue.Decision) {
				decisions = append(decisions, d)
			}}
			req := createWidget(t, base, env.Namespace(t), "w")
			res, err := loop.Reconcile(t.Context(), req)
			if err != nil || res.RequeueAfter <= 0 {
				t.Errorf("Reconcile = %+v, %v; want a backoff requeue and no error", res, err)
			}
			if len(decisions) != 1 {
				t.Fatalf("%d decisions, want 1: %+v", len(decisions), decisions)
			}
			d := decisions[0]
			if d.Class != errors.ClassTransient || !errors.Is(d.Err, unavailable) || (syncErr != nil && !errors.Is(d.Err, syncErr)) {
				t.Errorf("decision: class %v, error %v; want transient, with the write's error and Sync's", d.Class, d.Err)
			}
			if n := backoff.Failures(req); n != 1 {
				t.Errorf("%d backoff steps, want 1", n)
			}
		})
	}
}
