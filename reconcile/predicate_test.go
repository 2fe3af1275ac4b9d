package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// TestPredicate lists the verdict of reconcile.Predicate on every kind of
// event a Loop's object goes through.
func TestPredicate(t *testing.T) {
	const fin = "testing.reconcilekit.io/cleanup"
	base := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w",
		Generation: 1, ResourceVersion: "10", Finalizers: []string{fin}}}
	changed := func(change func(w *testapi.Widget)) *testapi.Widget {
		w := base.DeepCopy()
		w.ResourceVersion = "11"
		change(w)
		return w
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		new  *testapi.Widget
		want bool
	}{
		{"our own status write", changed(func(w *testapi.Widget) { w.Status.Phase = "Ready" }), false},
		{"a finalizer added", changed(func(w *testapi.Widget) { w.Finalizers = append(w.Finalizers, "other.io/x") }), false},
		{"a label changed", changed(func(w *testapi.Widget) { w.Labels = map[string]string{"a": "b"} }), false},
		{"the spec changed", changed(func(w *testapi.Widget) { w.Generation, w.Spec.Message = 2, "new" }), true},
		{"deletion began, generation bumped", changed(func(w *testapi.Widget) { w.Generation, w.DeletionTimestamp = 2, &now }), true},
		{"deletion began, no generation bump", changed(func(w *testapi.Widget) { w.DeletionTimestamp = &now }), true},
		{"our finalizer removed by someone else", changed(func(w *testapi.Widget) { w.Finalizers = nil }), true},
		{"a periodic resync", base.DeepCopy(), true},
		{"suspended by the annotation", changed(func(w *testapi.Widget) { w.Annotations = map[string]string{suspend.Annotation: "true"} }), true},
		{"a reconcile requested", changed(func(w *testapi.Widget) { w.Annotations = map[string]string{request.Annotation: "t1"} }), true},
		{"another annotation changed", changed(func(w *testapi.Widget) { w.Annotations = map[string]string{"note": "x"} }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reconcile.Predicate().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	p := reconcile.Predicate()
	if !p.Create(event.CreateEvent{Object: base}) || !p.Delete(event.DeleteEvent{Object: base}) || !p.Generic(event.GenericEvent{Object: base}) {
		t.Errorf("create, delete and generic events must all get through")
	}
}

// TestPredicateSparesTheReconcileOfAPermanentError runs a Loop whose Sync
// fails permanently under a real manager, with and without the predicate
// on For(). Without it, the Loop's status write (Stalled) wakes it again:
// a second reconcile fails the same way and controller-runtime logs the
// same error a second time. With it, one reconcile and one error line; and
// deletion still reaches the Loop, which runs the finalizer and lets the
// object go.
func TestPredicateSparesTheReconcileOfAPermanentError(t *testing.T) {
	const fin = "testing.reconcilekit.io/cleanup"
	for _, tc := range []struct {
		name string
		opts []builder.ForOption
		// wantReconciles and wantErrorLogs count the reconciles of the
		// failing Widget, and the "Reconciler error" lines logged for it,
		// before it is deleted.
		wantReconciles, wantErrorLogs int
	}{
		{name: "For without filters", wantReconciles: 2, wantErrorLogs: 2},
		{name: "For with reconcile.Predicate",
			opts:           []builder.ForOption{builder.WithPredicates(reconcile.Predicate())},
			wantReconciles: 1, wantErrorLogs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, ns := t.Context(), env.Namespace(t)
			logs := &errorLogs{}
			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{Logger: logs.logger()}})
			if err != nil {
				t.Fatal(err)
			}
			var cleanups atomic.Int32
			finalizers := &finalizer.Registry[*testapi.Widget]{}
			if err := finalizers.Register(fin, finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
				cleanups.Add(1)
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			loop := reconcile.New(mgr.GetClient(), "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
				if w.Spec.Message == "invalid" {
					return reconcile.Progress{}, errors.Permanent(errors.WithReason(
						errors.New("spec.message is invalid"), "InvalidMessage"))
				}
				return reconcile.Progress{}, nil
			})
			loop.APIReader = mgr.GetAPIReader()
			loop.Finalizers = finalizers
			// One worker (the default): requests are served in order.
			if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}, tc.opts...).Complete(mgr.Reconciler(loop)); err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)
			c := env.Client(t)

			// The finalizer is there from the start, so that the Loop's
			// only write is its status.
			failing := &testapi.Widget{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "failing", Finalizers: []string{fin}},
				Spec:       testapi.WidgetSpec{Message: "invalid"},
			}
			if err := c.Create(ctx, failing); err != nil {
				t.Fatal(err)
			}
			stalled := func() bool { return testenv.HasCondition(failing, status.TypeStalled, metav1.ConditionTrue) }
			if err := mgr.WaitConverged(ctx, failing, "Stalled", stalled); err != nil {
				t.Fatal(err)
			}
			// A barrier: the events of the failing Widget so far (its
			// status write among them) reached the controller before the
			// creation of another Widget, and the one worker serves them in
			// order; once the other Widget is reconciled, so is every
			// reconcile the status write caused.
			barrier := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "barrier"}}
			if err := c.Create(ctx, barrier); err != nil {
				t.Fatal(err)
			}
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := mgr.Reconciles.Wait(waitCtx, client.ObjectKeyFromObject(barrier), 1); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(failing)
			if got := mgr.Reconciles.Count(key); got != tc.wantReconciles {
				t.Errorf("reconciles of the failing Widget = %d, want %d", got, tc.wantReconciles)
			}
			if got := logs.count(failing.Name); got != tc.wantErrorLogs {
				t.Errorf("%q lines logged for the failing Widget = %d, want %d", reconcilerError, got, tc.wantErrorLogs)
			}

			// Deletion gets through: the finalizer runs and the Widget goes.
			if err := c.Delete(ctx, failing); err != nil {
				t.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(waitCtx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				err := c.Get(ctx, key, &testapi.Widget{})
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
			if err != nil {
				t.Fatalf("the deleted Widget never went away: %v", err)
			}
			if n := cleanups.Load(); n != 1 {
				t.Errorf("cleanups = %d, want 1", n)
			}
		})
	}
}

// reconcilerError is what controller-runtime logs when a reconcile returns
// an error.
const reconcilerError = "Reconciler error"

// errorLogs counts, per object name, the error lines controller-runtime
// logs for failed reconciles.
type errorLogs struct {
	mu     sync.Mutex
	byName map[string]int
}

func (l *errorLogs) logger() logr.Logger { return logr.New(&errorSink{logs: l}) }

func (l *errorLogs) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byName[name]
}

// errorSink is a logr.LogSink that counts reconcilerError lines by the
// "name" value controller-runtime puts on a reconcile's logger, and drops
// everything else.
type errorSink struct {
	logs *errorLogs
	kv   []any
}

func (s *errorSink) Init(logr.RuntimeInfo)    {}
func (s *errorSink) Enabled(int) bool         { return false }
func (s *errorSink) Info(int, string, ...any) {}
func (s *errorSink) WithName(string) logr.LogSink {
	return s
}

func (s *errorSink) WithValues(kv ...any) logr.LogSink {
	return &errorSink{logs: s.logs, kv: append(slices.Clone(s.kv), kv...)}
}

func (s *errorSink) Error(_ error, msg string, kv ...any) {
	if msg != reconcilerError {
		return
	}
	all := append(slices.Clone(s.kv), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		if all[i] == "name" {
			s.logs.mu.Lock()
			if s.logs.byName == nil {
				s.logs.byName = map[string]int{}
			}
			s.logs.byName[fmt.Sprint(all[i+1])]++
			s.logs.mu.Unlock()
		}
	}
}

func ExamplePredicate() {
	p := reconcile.Predicate()
	read := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1, ResourceVersion: "10"}}

	statusWritten := read.DeepCopy()
	statusWritten.ResourceVersion = "11"
	statusWritten.Status.Phase = "Ready"
	fmt.Println("our status write:", p.Update(event.UpdateEvent{ObjectOld: read, ObjectNew: statusWritten}))

	specChanged := read.DeepCopy()
	specChanged.ResourceVersion, specChanged.Generation = "12", 2
	fmt.Println("a spec change:", p.Update(event.UpdateEvent{ObjectOld: read, ObjectNew: specChanged}))

	deleting := read.DeepCopy()
	now := metav1.Now()
	deleting.ResourceVersion, deleting.DeletionTimestamp = "13", &now
	fmt.Println("deletion begins:", p.Update(event.UpdateEvent{ObjectOld: read, ObjectNew: deleting}))

	fmt.Println("a periodic resync:", p.Update(event.UpdateEvent{ObjectOld: read, ObjectNew: read}))
	// Output:
	// our status write: false
	// a spec change: true
	// deletion begins: true
	// a periodic resync: true
}
