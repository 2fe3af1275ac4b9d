package reconcile_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// The users' controls of a Loop (issue 37): a Loop over Widgets whose Sync
// keeps a child ConfigMap holding spec.message, with a finalizer, suspended
// and resumed by the annotation or spec.suspend, asked for reconciles with
// the request annotation.

const (
	controlOwner     = "control-test"
	controlFinalizer = "testing.reconcilekit.io/control"
)

// newControlLoop returns the Loop over c, and a counter of its cleanups.
func newControlLoop(t *testing.T, c client.Client) (*reconcile.Loop[*testapi.Widget], *atomic.Int32) {
	t.Helper()
	var cleanups atomic.Int32
	fin := &finalizer.Registry[*testapi.Widget]{}
	if err := fin.Register(controlFinalizer, finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		cleanups.Add(1)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	children := drift.NewWriter(c, controlOwner)
	loop := reconcile.New(c, controlOwner, func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		_, err := children.Ensure(ctx, child(w.Namespace, w.Name, w.Spec.Message), drift.Owner(w))
		return reconcile.Progress{Reason: "ChildWritten"}, err
	})
	loop.Finalizers = fin
	return loop, &cleanups
}

func child(ns, name, message string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-child"}, Data: map[string]string{"message": message}}
}

// patchWidget changes the Widget as a user would (kubectl annotate, edit).
func patchWidget(t *testing.T, c client.Client, key client.ObjectKey, change func(*testapi.Widget)) {
	t.Helper()
	var w testapi.Widget
	if err := c.Get(t.Context(), key, &w); err != nil {
		t.Fatal(err)
	}
	before := w.DeepCopy()
	change(&w)
	if err := c.Patch(t.Context(), &w, client.MergeFrom(before), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
}

func childMessage(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(child(ns, name, "")), &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["message"]
}

// TestLoopLeavesASuspendedObjectAsEditedAndRepairsItOnResume proves the
// promise of a suspension, for both conventions: while suspended, the
// object and its child stay as a user edited them, at no cost beyond the
// status writes of the Suspended condition (when it is set, and when it
// records a new generation); the one reconcile after resuming repairs the
// child, applies the spec edited meanwhile and removes the condition.
func TestLoopLeavesASuspendedObjectAsEditedAndRepairsItOnResume(t *testing.T) {
	for _, tc := range []struct {
		name            string
		suspend, resume func(*testapi.Widget)
	}{
		{
			name:    "annotation",
			suspend: func(w *testapi.Widget) { w.Annotations = map[string]string{suspend.Annotation: "true"} },
			resume:  func(w *testapi.Widget) { w.Annotations = nil },
		},
		{
			name:    "spec.suspend",
			suspend: func(w *testapi.Widget) { w.Spec.Suspend = true },
			resume:  func(w *testapi.Widget) { w.Spec.Suspend = false },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var counter reconciletest.Counter
			c := env.Client(t)
			ns := env.Namespace(t)
			loop, _ := newControlLoop(t, counter.Wrap(c))
			req := createWidget(t, c, ns, "one")
			reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
			reconcileOnce := func() []reconciletest.APIRequest {
				t.Helper()
				counter.Reset()
				if _, err := loop.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				return counter.Writes()
			}

			patchWidget(t, c, req.NamespacedName, tc.suspend)
			if writes := reconcileOnce(); len(writes) != 1 || writes[0].Verb != reconciletest.VerbStatusPatch {
				t.Fatalf("writes of the reconcile that finds the Widget suspended = %v, want one status patch", writes)
			}
			w := getWidget(t, c, req)
			if !status.IsTrue(w, suspend.TypeSuspended) || !status.IsTrue(w, status.TypeReady) {
				t.Fatalf("conditions of the suspended Widget = %+v, want Suspended and Ready still True", w.Status.Conditions)
			}
			observed := w.Status.ObservedGeneration

			// A user edits the child and the spec by hand.
			var cm corev1.ConfigMap
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(child(ns, "w", "")), &cm); err != nil {
				t.Fatal(err)
			}
			cm.Data["message"] = "by hand"
			if err := c.Update(t.Context(), &cm); err != nil {
				t.Fatal(err)
			}
			if writes := reconcileOnce(); len(writes) != 0 {
				t.Fatalf("the reconcile after the child's edit wrote %v, want nothing", writes)
			}
			// The Suspended condition records the generation it saw, in
			// one status patch; nothing else is written.
			patchWidget(t, c, req.NamespacedName, func(w *testapi.Widget) { w.Spec.Message = "two" })
			if writes := reconcileOnce(); len(writes) != 1 || writes[0].Verb != reconciletest.VerbStatusPatch {
				t.Fatalf("writes of the reconcile after the spec's edit = %v, want one status patch", writes)
			}
			for i := range 2 {
				if writes := reconcileOnce(); len(writes) != 0 {
					t.Fatalf("reconcile %d of the suspended Widget wrote %v, want nothing", i, writes)
				}
			}
			if got := childMessage(t, c, ns, "w"); got != "by hand" {
				t.Errorf("child while suspended = %q, want it as edited", got)
			}
			w = getWidget(t, c, req)
			if w.Status.ObservedGeneration != observed || !status.IsTrue(w, status.TypeReady) {
				t.Errorf("suspended: observedGeneration %d (generation %d), Ready %v; want %d, not observed, Ready as left",
					w.Status.ObservedGeneration, w.Generation, status.IsTrue(w, status.TypeReady), observed)
			}

			patchWidget(t, c, req.NamespacedName, tc.resume)
			writes := reconcileOnce()
			if got := childMessage(t, c, ns, "w"); got != "two" {
				t.Errorf("child after the one reconcile that resumes = %q, want two (repaired, and the edited spec applied)", got)
			}
			w = getWidget(t, c, req)
			if _, ok := status.FindCondition(w, suspend.TypeSuspended); ok || w.Status.ObservedGeneration != w.Generation || !status.IsTrue(w, status.TypeReady) {
				t.Errorf("after resuming: conditions %+v, observedGeneration %d of %d; want no Suspended, Ready, observed",
					w.Status.Conditions, w.Status.ObservedGeneration, w.Generation)
			}
			if len(writes) != 2 {
				t.Errorf("writes of the reconcile that resumes = %v, want 2: the child's patch and one status patch", writes)
			}
			if writes := reconcileOnce(); len(writes) != 0 {
				t.Errorf("the next reconcile wrote %v, want nothing", writes)
			}
		})
	}
}

// TestLoopRunsTheFinalizerOfASuspendedObject: deleting a suspended object
// runs its cleanup and lets it go.
func TestLoopRunsTheFinalizerOfASuspendedObject(t *testing.T) {
	var counter reconciletest.Counter
	c := env.Client(t)
	ns := env.Namespace(t)
	loop, cleanups := newControlLoop(t, counter.Wrap(c))
	req := createWidget(t, c, ns, "one")
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	patchWidget(t, c, req.NamespacedName, func(w *testapi.Widget) { w.Annotations = map[string]string{suspend.Annotation: "true"} })
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if w := getWidget(t, c, req); !status.IsTrue(w, suspend.TypeSuspended) {
		t.Fatalf("conditions = %+v, want Suspended", w.Status.Conditions)
	}
	if err := c.Delete(t.Context(), getWidget(t, c, req)); err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n := cleanups.Load(); n != 1 {
		t.Errorf("cleanups = %d, want 1", n)
	}
	if err := c.Get(t.Context(), req.NamespacedName, &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted suspended Widget: %v, want it gone", err)
	}
}

// TestLoopSuspendedBeforeItsFirstReconcile: a Widget created suspended gets
// no finalizer, no child and no Sync, only Suspended=True and
// Ready=Unknown; resuming reconciles it as new.
func TestLoopSuspendedBeforeItsFirstReconcile(t *testing.T) {
	var counter reconciletest.Counter
	c := env.Client(t)
	ns := env.Namespace(t)
	loop, _ := newControlLoop(t, counter.Wrap(c))
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "one", Suspend: true}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	report := reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	if writes := report.Writes(); len(writes) != 1 || writes[0].Verb != reconciletest.VerbStatusPatch {
		t.Errorf("writes for a Widget created suspended = %v, want one status patch", writes)
	}
	w = getWidget(t, c, req)
	ready, _ := status.FindCondition(w, status.TypeReady)
	if !status.IsTrue(w, suspend.TypeSuspended) || ready.Status != metav1.ConditionUnknown || ready.Reason != suspend.ReasonSuspended || len(w.Finalizers) != 0 {
		t.Errorf("a Widget created suspended: conditions %+v, finalizers %v; want Suspended, Ready Unknown, none", w.Status.Conditions, w.Finalizers)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(child(ns, "w", "")), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("child of a Widget created suspended: %v, want none", err)
	}
	patchWidget(t, c, req.NamespacedName, func(w *testapi.Widget) { w.Spec.Suspend = false })
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	w = getWidget(t, c, req)
	if _, ok := status.FindCondition(w, suspend.TypeSuspended); ok || !status.IsTrue(w, status.TypeReady) || childMessage(t, c, ns, "w") != "one" {
		t.Errorf("resumed: conditions %+v; want Ready only, and the child", w.Status.Conditions)
	}
}

// controlManager runs the control Loop under a manager whose requests and
// reconciles are counted, with reconcile.Predicate on For() and the child
// ConfigMaps owned.
func controlManager(t *testing.T, ns string, syncPeriod time.Duration) *testenv.Manager {
	t.Helper()
	mgr, _ := controlManagerWithResults(t, ns, syncPeriod)
	return mgr
}

// lastResults records what the last reconcile of each object returned.
type lastResults struct {
	mu   sync.Mutex
	last map[types.NamespacedName]crreconcile.Result
}

// wrap returns r recording its results.
func (l *lastResults) wrap(r crreconcile.Reconciler) crreconcile.Reconciler {
	return crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.last == nil {
			l.last = map[types.NamespacedName]crreconcile.Result{}
		}
		l.last[req.NamespacedName] = res
		if err != nil {
			l.last[req.NamespacedName] = crreconcile.Result{Requeue: true}
		}
		return res, err
	})
}

// pending says whether the last reconcile of key asked to run again: a
// requeue waits in the queue's timer, where no barrier of events sees it.
func (l *lastResults) pending(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := l.last[key]
	return res.Requeue || res.RequeueAfter > 0
}

// controlManagerWithResults is controlManager, with what each object's
// last reconcile returned.
func controlManagerWithResults(t *testing.T, ns string, syncPeriod time.Duration) (*testenv.Manager, *lastResults) {
	t.Helper()
	results := &lastResults{}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: syncPeriod})
	if err != nil {
		t.Fatal(err)
	}
	loop, _ := newControlLoop(t, mgr.GetClient())
	loop.APIReader = mgr.GetAPIReader()
	// One worker (the default): requests are served in order.
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&corev1.ConfigMap{}).
		Complete(mgr.Reconciler(results.wrap(loop))); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr, results
}

// TestLoopHandlesAReconcileRequestOnceAndRecordsIt: a new token in the
// request annotation of a converged Widget passes the Loop's predicate and
// runs one reconcile, whose one write is the status recording the token;
// the same token again costs nothing.
func TestLoopHandlesAReconcileRequestOnceAndRecordsIt(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, results := controlManagerWithResults(t, ns, 0)
	c := env.Client(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "one"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(w)
	ready := func() bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) }
	if err := mgr.WaitConverged(ctx, w, "Ready", ready); err != nil {
		t.Fatal(err)
	}
	// barrier waits until every event so far was served: the one worker
	// serves requests in order, so once a new Widget is reconciled, so is
	// every reconcile queued before its creation. A reconcile of w that
	// asked to run again (a quiet requeue after reading a cache older than
	// the Loop's own write) waits in the queue's timer, not in its order:
	// the barrier waits for it too, or it would count as the request's.
	barriers := 0
	barrier := func() {
		t.Helper()
		barriers++
		b := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "barrier-" + string(rune('a'+barriers))}}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := mgr.Reconciles.Wait(waitCtx, client.ObjectKeyFromObject(b), 1); err != nil {
			t.Fatal(err)
		}
		if err := mgr.WaitConverged(ctx, b, "Ready", func() bool { return testenv.HasCondition(b, status.TypeReady, metav1.ConditionTrue) }); err != nil {
			t.Fatal(err)
		}
		for results.pending(key) {
			if err := mgr.Reconciles.Wait(waitCtx, key, mgr.Reconciles.Count(key)+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	barrier()

	for _, token := range []string{"2026-11-25T10:00:00Z", "2026-11-25T10:05:00Z"} {
		before := mgr.Reconciles.Count(key)
		mgr.Requests.Reset()
		patchWidget(t, c, key, func(w *testapi.Widget) { w.Annotations = map[string]string{request.Annotation: token} })
		handled := func() bool { return w.Status.LastHandledReconcileAt == token }
		if err := mgr.WaitConverged(ctx, w, "lastHandledReconcileAt "+token, handled); err != nil {
			t.Fatal(err)
		}
		writes := mgr.Requests.Writes()
		barrier()
		if got := mgr.Reconciles.Count(key) - before; got != 1 {
			t.Errorf("reconciles for request %s = %d, want 1", token, got)
		}
		if len(writes) != 1 || writes[0].Verb != reconciletest.VerbStatusPatch {
			t.Errorf("writes for request %s = %v, want the one status patch that records it", token, writes)
		}
		if !status.IsTrue(w, status.TypeReady) {
			t.Errorf("conditions beside the token = %+v, want Ready", w.Status.Conditions)
		}
	}

	// The same token again, beside another change of annotations: no
	// reconcile, nothing written.
	before := mgr.Reconciles.Count(key)
	mgr.Requests.Reset()
	patchWidget(t, c, key, func(w *testapi.Widget) { w.Annotations["note"] = "unrelated" })
	barrier()
	if got := mgr.Reconciles.Count(key) - before; got != 0 {
		t.Errorf("reconciles after an unrelated annotation = %d, want 0", got)
	}
	for _, r := range mgr.Requests.Writes() {
		if r.Name == "w" || r.Name == "w-child" {
			t.Errorf("write for an unchanged request: %v", r)
		}
	}
}

// TestLoopResyncOfConvergedSuspendedAndRequestedObjectsWritesNothing: the
// periodic resync reconciles every object again; for a converged Widget, a
// suspended one and one whose request was handled, the manager sends no
// write at all.
func TestLoopResyncOfConvergedSuspendedAndRequestedObjectsWritesNothing(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr := controlManager(t, ns, 2*time.Second)
	c := env.Client(t)
	widgets := map[string]func(*testapi.Widget) bool{
		"converged": func(w *testapi.Widget) bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) },
		"suspended": func(w *testapi.Widget) bool {
			return testenv.HasCondition(w, suspend.TypeSuspended, metav1.ConditionTrue)
		},
		"requested": func(w *testapi.Widget) bool { return w.Status.LastHandledReconcileAt == "t1" },
	}
	for name := range widgets {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: testapi.WidgetSpec{Message: name}}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := mgr.WaitConverged(ctx, w, "Ready", func() bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) }); err != nil {
			t.Fatal(err)
		}
	}
	patchWidget(t, c, client.ObjectKey{Namespace: ns, Name: "suspended"}, func(w *testapi.Widget) {
		w.Annotations = map[string]string{suspend.Annotation: "true"}
	})
	patchWidget(t, c, client.ObjectKey{Namespace: ns, Name: "requested"}, func(w *testapi.Widget) {
		w.Annotations = map[string]string{request.Annotation: "t1"}
	})
	for name, met := range widgets {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := mgr.WaitConverged(ctx, w, name, func() bool { return met(w) }); err != nil {
			t.Fatal(err)
		}
	}

	mgr.Requests.Reset()
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for name := range widgets {
		key := client.ObjectKey{Namespace: ns, Name: name}
		// Two more reconciles each: at least one is a resync that began
		// after the reset.
		if err := mgr.Reconciles.Wait(waitCtx, key, mgr.Reconciles.Count(key)+2); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(waitCtx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return mgr.Reconciles.Running() == 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if writes := mgr.Requests.Writes(); len(writes) > 0 {
		t.Errorf("resyncs of converged, suspended and requested Widgets wrote %v, want nothing", writes)
	}
}
