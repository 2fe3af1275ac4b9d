package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// loopFixture is a Loop over Widgets whose Sync copies spec.message into
// status.phase, with a finalizer that records its cleanups. A test that
// needs another Sync sets sync before the first reconcile.
type loopFixture struct {
	counter  reconciletest.Counter
	loop     *reconcile.Loop[*testapi.Widget]
	sync     func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error)
	syncErr  atomic.Pointer[error]
	cleanups atomic.Int32
}

func newLoopFixture(t *testing.T) (*loopFixture, client.Client) {
	t.Helper()
	base := env.Client(t)
	f := &loopFixture{}
	fin := &finalizer.Registry[*testapi.Widget]{}
	if err := fin.Register("testing.reconcilekit.io/cleanup", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		f.cleanups.Add(1)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	f.loop = reconcile.New(f.counter.Wrap(base), "loop-test", f.syncWidget)
	f.loop.Finalizers = fin
	return f, base
}

// syncWidget is the fixture's Sync: f.sync when set, else spec.message
// copied into status.phase (or the error failWith stored).
func (f *loopFixture) syncWidget(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
	if f.sync != nil {
		return f.sync(ctx, w)
	}
	if p := f.syncErr.Load(); p != nil && *p != nil {
		return reconcile.Progress{}, *p
	}
	w.Status.Phase = w.Spec.Message
	return reconcile.Progress{}, nil
}

func (f *loopFixture) failWith(err error) { f.syncErr.Store(&err) }

func createWidget(t *testing.T, c client.Client, ns, msg string) crreconcile.Request {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: msg}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
}

func getWidget(t *testing.T, c client.Client, req crreconcile.Request) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{}
	if err := c.Get(t.Context(), req.NamespacedName, w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestLoopMarksReadyWithObservedGenerationAndFollowsSpecChanges(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "one")

	report := reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	w := getWidget(t, c, req)
	if !status.IsTrue(w, status.TypeReady) || w.Status.ObservedGeneration != 1 || w.Status.Phase != "one" {
		t.Fatalf("after converging: ready=%v observedGeneration=%d phase=%q conditions=%+v",
			status.IsTrue(w, status.TypeReady), w.Status.ObservedGeneration, w.Status.Phase, w.Status.Conditions)
	}
	if len(w.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the loop's one", w.Finalizers)
	}
	// First reconcile: one finalizer patch and one status patch, nothing else.
	if got := len(report.Writes()); got != 2 {
		t.Errorf("writes to converge a new object = %d, want 2 (finalizer, status): %v", got, report.Writes())
	}

	w.Spec.Message = "two"
	if err := c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	w = getWidget(t, c, req)
	if w.Status.ObservedGeneration != 2 || w.Status.Phase != "two" {
		t.Errorf("after a spec change: observedGeneration=%d phase=%q, want 2 and two", w.Status.ObservedGeneration, w.Status.Phase)
	}
	ready, _ := status.FindCondition(w, status.TypeReady)
	if ready.ObservedGeneration != 2 {
		t.Errorf("Ready.observedGeneration = %d, want 2", ready.ObservedGeneration)
	}
}

func TestLoopWritesNothingOnAConvergedObject(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "steady")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	f.counter.Reset()
	for range 10 {
		if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if w := f.counter.Writes(); len(w) != 0 {
		t.Errorf("10 resyncs of a converged object wrote %d times: %v", len(w), w)
	}
}

func TestLoopStallsOnAPermanentErrorAndReturnsATerminalError(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "x")
	f.failWith(errors.Permanent(fmt.Errorf("spec.message %q is not supported", "x")))

	_, err := f.loop.Reconcile(t.Context(), req)
	if !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Fatalf("error = %v, want a reconcile.TerminalError so controller-runtime stops retrying", err)
	}
	w := getWidget(t, c, req)
	stalled, _ := status.FindCondition(w, status.TypeStalled)
	if stalled.Status != metav1.ConditionTrue || stalled.Message == "" {
		t.Errorf("Stalled = %+v, want True with the error's message", stalled)
	}
	if status.IsTrue(w, status.TypeReady) || status.IsTrue(w, status.TypeReconciling) {
		t.Errorf("a stalled object is also Ready or Reconciling: %+v", w.Status.Conditions)
	}

	// The same failure again writes nothing: its reason and message are stable.
	f.counter.Reset()
	if _, err := f.loop.Reconcile(t.Context(), req); !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Fatalf("second error = %v, want terminal", err)
	}
	if w := f.counter.Writes(); len(w) != 0 {
		t.Errorf("a repeated permanent failure wrote %d times: %v", len(w), w)
	}
}

func TestLoopKeepsTheResultAndErrorOfSyncWhenStatusAlsoChanged(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "first")
	f.loop.Policy = &requeue.Policy{ReportAfter: -1} // report every failure at once
	// A clock that stands still: the requeue is Sync's to the nanosecond
	// (the time the status write takes is otherwise taken off it).
	f.loop.Clock = clocktesting.NewFakePassiveClock(time.Now())
	f.sync = func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		w.Status.Phase = "waiting"
		return reconcile.Progress{Requeue: ctrl.Result{RequeueAfter: 42 * time.Second}}, nil
	}
	res, err := f.loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != 42*time.Second {
		t.Fatalf("Reconcile = %+v, %v; want RequeueAfter 42s and no error although status was written", res, err)
	}
	if got := getWidget(t, c, req).Status.Phase; got != "waiting" {
		t.Errorf("status.phase = %q, want waiting", got)
	}

	transient := apierrors.NewServiceUnavailable("try later")
	f.sync = func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		w.Status.Phase = "broken"
		return reconcile.Progress{}, transient
	}
	_, err = f.loop.Reconcile(t.Context(), req)
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error = %v, want the transient error returned for a backoff retry", err)
	}
	w := getWidget(t, c, req)
	rec, _ := status.FindCondition(w, status.TypeReconciling)
	if rec.Status != metav1.ConditionTrue || status.IsTrue(w, status.TypeReady) {
		t.Errorf("after a transient error: conditions = %+v, want Reconciling=True, not Ready", w.Status.Conditions)
	}
}

func TestLoopRequeuesAConflictQuietlyWithoutWritingStatus(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "c")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	f.failWith(apierrors.NewConflict(schema.GroupResource{Group: "testing.reconcilekit.io", Resource: "widgets"}, "w", fmt.Errorf("the object has been modified")))
	f.counter.Reset()
	res, err := f.loop.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter <= 0 {
		t.Errorf("Reconcile on a conflict = %+v, %v; want a requeue and no error", res, err)
	}
	if w := f.counter.Writes(); len(w) != 0 {
		t.Errorf("a conflict wrote %d times: %v", len(w), w)
	}
	if w := getWidget(t, c, req); !status.IsTrue(w, status.TypeReady) {
		t.Errorf("a conflict changed the conditions: %+v", w.Status.Conditions)
	}
}

func TestLoopRunsFinalizersOnDeleteAndLetsTheObjectGo(t *testing.T) {
	f, c := newLoopFixture(t)
	req := createWidget(t, c, env.Namespace(t), "bye")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	if err := c.Delete(t.Context(), getWidget(t, c, req)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n := f.cleanups.Load(); n != 1 {
		t.Errorf("cleanups = %d, want 1", n)
	}
	if err := c.Get(t.Context(), req.NamespacedName, &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("after cleanup: get = %v, want NotFound", err)
	}
	// Gone: the next reconcile is a no-op without error.
	if res, err := f.loop.Reconcile(t.Context(), req); err != nil || !res.IsZero() {
		t.Errorf("reconcile of a gone object = %+v, %v; want done", res, err)
	}
}

// TestLoopTellsGoneOnlyWhenItsObjectIsGone: the Loop's Gone is called with
// the object's key by a reconcile that finds the object gone, and by no
// other: not while it exists, not while its finalizers run.
func TestLoopTellsGoneOnlyWhenItsObjectIsGone(t *testing.T) {
	f, c := newLoopFixture(t)
	var gone []types.NamespacedName
	f.loop.Gone = func(key types.NamespacedName) { gone = append(gone, key) }
	req := createWidget(t, c, env.Namespace(t), "bye")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	if err := c.Delete(t.Context(), getWidget(t, c, req)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.loop.Reconcile(t.Context(), req); err != nil { // the finalizer's cleanup
		t.Fatal(err)
	}
	if len(gone) != 0 {
		t.Fatalf("Gone was told %v while the object existed", gone)
	}
	if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.NamespacedName{req.NamespacedName}, gone); diff != "" {
		t.Errorf("Gone was told (-want +got):\n%s", diff)
	}
}

// TestLoopWithoutClientSyncOrFieldOwnerFailsTerminallyInsteadOfPanicking:
// Validate names what is missing, and Reconcile returns it as a permanent
// (so terminal) error, sending nothing: a Loop without a field owner would
// write its status and finalizers under the client's default field
// manager. A missing field owner is the library's one ErrNoFieldOwner.
// The zero Loop, which has none of the three, fails the same way.
func TestLoopWithoutClientSyncOrFieldOwnerFailsTerminallyInsteadOfPanicking(t *testing.T) {
	sync := func(context.Context, *testapi.Widget) (reconcile.Progress, error) { return reconcile.Progress{}, nil }
	var counter reconciletest.Counter
	c := counter.Wrap(env.Client(t))
	for _, tt := range []struct {
		name, missing string
		loop          *reconcile.Loop[*testapi.Widget]
		also          error
	}{
		{"no client", "no client", reconcile.New(nil, "loop-test", sync), nil},
		{"no sync", "no Sync", reconcile.New[*testapi.Widget](c, "loop-test", nil), nil},
		{"no field owner", "reconcile.New(c, fieldOwner, sync)", reconcile.New(c, "", sync), errors.ErrNoFieldOwner},
		{"the zero Loop", "reconcile.New(c, fieldOwner, sync)", &reconcile.Loop[*testapi.Widget]{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.loop.Validate(); !errors.Is(err, reconcile.ErrInvalidLoop) || !strings.Contains(err.Error(), tt.missing) {
				t.Errorf("Validate = %v, want ErrInvalidLoop naming %s", err, tt.missing)
			}
			_, err := tt.loop.Reconcile(t.Context(), crreconcile.Request{})
			if !errors.Is(err, reconcile.ErrInvalidLoop) || !errors.Is(err, crreconcile.TerminalError(nil)) {
				t.Errorf("Reconcile: error = %v, want ErrInvalidLoop as a terminal error", err)
			}
			if tt.also != nil && !errors.Is(err, tt.also) {
				t.Errorf("Reconcile: error = %v, want it to match %v", err, tt.also)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("class %v, want permanent", class)
			}
			if n := len(counter.Requests()); n != 0 {
				t.Errorf("%d requests, want none", n)
			}
		})
	}
}

// TestLoopRefusesAnInvalidFreshnessTracker: a Freshness Tracker that fails
// its own Validate makes the Loop invalid, before any request.
func TestLoopRefusesAnInvalidFreshnessTracker(t *testing.T) {
	var counter reconciletest.Counter
	l := reconcile.New(counter.Wrap(env.Client(t)), "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
		return reconcile.Progress{}, nil
	})
	l.Freshness = &freshness.Tracker{TTL: -time.Second}
	if err := l.Validate(); !errors.Is(err, reconcile.ErrInvalidLoop) || !errors.Is(err, freshness.ErrInvalidTracker) {
		t.Errorf("Validate = %v, want ErrInvalidLoop wrapping ErrInvalidTracker", err)
	}
	if _, err := l.Reconcile(t.Context(), crreconcile.Request{}); !errors.Is(err, freshness.ErrInvalidTracker) {
		t.Errorf("Reconcile = %v, want ErrInvalidTracker", err)
	}
	if n := len(counter.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// TestLoopWritesStatusAndFinalizersAsItsFieldOwner: the Loop's finalizer
// patch and status write are recorded in managedFields under the field
// owner given to New, not under the client's default manager (here "manager", the
// name of every kubebuilder binary, which is where both went before: the
// finalizer patch carried no field manager, and FieldOwner was optional).
func TestLoopWritesStatusAndFinalizersAsItsFieldOwner(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "manager"
	asManager, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f, c := newLoopFixture(t)
	fin := f.loop.Finalizers
	f.loop = reconcile.New(f.counter.Wrap(asManager), "widget-operator", f.syncWidget)
	f.loop.Finalizers = fin
	req := createWidget(t, c, env.Namespace(t), "one")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))

	w := getWidget(t, c, req)
	if !status.IsTrue(w, status.TypeReady) || len(w.Finalizers) != 1 {
		t.Fatalf("not converged: finalizers %v, conditions %+v", w.Finalizers, w.Status.Conditions)
	}
	owners := map[string]string{}
	for _, mf := range w.ManagedFields {
		fields := mf.FieldsV1.GetRawString()
		if strings.Contains(fields, "f:finalizers") {
			owners["finalizers"] += mf.Manager + "/" + mf.Subresource + " "
		}
		if strings.Contains(fields, "f:conditions") {
			owners["conditions"] += mf.Manager + "/" + mf.Subresource + " "
		}
		if mf.Manager == "manager" {
			t.Errorf("an entry of manager: %s", fields)
		}
	}
	want := map[string]string{"finalizers": "widget-operator/ ", "conditions": "widget-operator/status "}
	if diff := cmp.Diff(want, owners); diff != "" {
		t.Errorf("field managers (-want +got):\n%s", diff)
	}
}

// TestLoopUnderAManagerReconcilesAStalledObjectOnlyOnce drives the loop from
// a real controller: a permanent error must not be retried. The manager
// caches the test's namespace alone: its Loop writes the status of every
// Widget it reconciles, and must write no other test's.
func TestLoopUnderAManagerReconcilesAStalledObjectOnlyOnce(t *testing.T) {
	reconciletest.CheckGoroutines(t)
	c := env.Client(t)
	ns := env.Namespace(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	loop := reconcile.New(mgr.GetClient(), "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		calls.Add(1)
		return reconcile.Progress{}, errors.Permanent(fmt.Errorf("cannot handle %q", w.Spec.Message))
	})
	loop.Recorder = mgr.GetEventRecorder("loop-test")
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Named("stall-once").Complete(loop); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	req := createWidget(t, c, ns, "bad")
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return status.IsTrue(getWidget(t, c, req), status.TypeStalled), nil
	})
	if err != nil {
		t.Fatalf("never Stalled: %v", err)
	}
	// Two reconciles: the create, and the update event of the status write
	// (no predicate here filters it; that one finds nothing to write). A
	// retry would be scheduled at the end of a reconcile, where the
	// workqueue counts it (or controller-runtime counts a requeue result):
	// once both reconciles are over and the controller is idle, the
	// counters say whether one is coming, without waiting for it.
	controller := map[string]string{"controller": "stall-once"}
	idle := func() bool {
		return calls.Load() >= 2 &&
			metricstest.Value(t, "controller_runtime_active_workers", controller) == 0 &&
			metricstest.Value(t, "workqueue_depth", controller) == 0
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return idle(), nil
	}); err != nil {
		t.Fatalf("the controller never settled after 2 reconciles: %d Sync calls", calls.Load())
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Sync calls = %d, want 2 (the create and the status write's update event)", n)
	}
	if n := metricstest.Value(t, "workqueue_retries_total", controller); n != 0 {
		t.Errorf("workqueue retries = %v, want 0: a permanent error must not be retried", n)
	}
	for _, result := range []string{"requeue", "requeue_after"} {
		if n := metricstest.Value(t, "controller_runtime_reconcile_total", map[string]string{"controller": "stall-once", "result": result}); n != 0 {
			t.Errorf("reconciles with result %s = %v, want 0", result, n)
		}
	}
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	warnings := 0
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && e.Regarding.Name == req.Name {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("warning events = %d, want exactly 1 for the one transition to Stalled", warnings)
	}
}

func TestLoopRecordsOneEventPerTransitionNotPerRetry(t *testing.T) {
	f, c := newLoopFixture(t)
	rec := events.NewFakeRecorder(32)
	f.loop.Recorder = rec
	f.loop.Policy = &requeue.Policy{ReportAfter: -1} // report every failure at once
	req := createWidget(t, c, env.Namespace(t), "e")

	drain := func() []string {
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
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	if got := drain(); len(got) != 1 || !strings.HasPrefix(got[0], "Normal Succeeded") {
		t.Errorf("events after becoming Ready = %q, want one Normal Succeeded", got)
	}

	f.failWith(apierrors.NewServiceUnavailable("etcd is down"))
	for range 3 {
		if _, err := f.loop.Reconcile(t.Context(), req); err == nil {
			t.Fatal("want the transient error back")
		}
	}
	if got := drain(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning ServiceUnavailable") {
		t.Errorf("events after 3 identical transient failures = %q, want one Warning ServiceUnavailable", got)
	}

	f.failWith(nil)
	if _, err := f.loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 1 || !strings.HasPrefix(got[0], "Normal Succeeded") {
		t.Errorf("events after recovering = %q, want one Normal Succeeded", got)
	}
}

func TestLoopReportsAFailingCleanupOnConditionsWithOneEvent(t *testing.T) {
	c := env.Client(t)
	var counter reconciletest.Counter
	var failing atomic.Bool
	failing.Store(true)
	fin := &finalizer.Registry[*testapi.Widget]{}
	if err := fin.Register("testing.reconcilekit.io/flaky", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		if failing.Load() {
			return apierrors.NewServiceUnavailable("the external system is down")
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(32)
	loop := reconcile.New(counter.Wrap(c), "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) { return reconcile.Progress{}, nil })
	loop.Finalizers = fin
	loop.Recorder = rec
	loop.Policy = &requeue.Policy{ReportAfter: -1} // report every failure at once
	req := createWidget(t, c, env.Namespace(t), "cleanup")
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	<-rec.Events // Ready
	if err := c.Delete(t.Context(), getWidget(t, c, req)); err != nil {
		t.Fatal(err)
	}

	for range 3 {
		if _, err := loop.Reconcile(t.Context(), req); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("error = %v, want the cleanup's error back for a retry", err)
		}
	}
	w := getWidget(t, c, req)
	rc, _ := status.FindCondition(w, status.TypeReconciling)
	if rc.Status != metav1.ConditionTrue || rc.Reason != reconcile.ReasonCleanupFailed || !strings.Contains(rc.Message, "external system is down") {
		t.Errorf("Reconciling = %+v, want True/%s with the cause", rc, reconcile.ReasonCleanupFailed)
	}
	if len(w.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the failing one kept", w.Finalizers)
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("events after 3 failed cleanups = %d, want 1", n)
	}

	failing.Store(false)
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), req.NamespacedName, &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the cleanup succeeded: get = %v, want NotFound", err)
	}
}
