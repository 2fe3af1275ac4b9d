package freshness_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}

// cacheLag is how far behind the API server the managers' caches run in
// these tests: far longer than the time between two reconciles.
const cacheLag = 700 * time.Millisecond

// TestNoSecondChildFromALaggingCache runs, under a real manager whose cache
// lags on purpose, the classic mistake: a reconciler that lists its children
// and creates one (with generateName) when it sees none, and runs again
// every 20ms. Unguarded it creates a child on nearly every run until the
// cache catches up; guarded, by Tracker.NewClient in the manager's options or
// by controller-runtime's consistency client, the List waits for the child
// it created, so there is exactly one.
func TestNoSecondChildFromALaggingCache(t *testing.T) {
	for _, g := range []guard{unguarded, guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			guarded := g != unguarded
			ns := env.Namespace(t)
			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: &reconciletest.CacheDelay{Delay: cacheLag}, Options: g.options(&freshness.Tracker{})})
			if err != nil {
				t.Fatal(err)
			}
			c := mgr.GetClient()
			var runs atomic.Int32
			r := crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
				if runs.Add(1) > 40 {
					return crreconcile.Result{}, nil
				}
				var children corev1.ConfigMapList
				if err := c.List(ctx, &children, client.InNamespace(ns), client.MatchingLabels{"owner": req.Name}); err != nil {
					return crreconcile.Result{}, err
				}
				if len(children.Items) == 0 {
					child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: req.Name + "-",
						Labels: map[string]string{"owner": req.Name}}}
					if err := c.Create(ctx, child); err != nil {
						return crreconcile.Result{}, err
					}
				}
				return crreconcile.Result{RequeueAfter: 20 * time.Millisecond}, nil
			})
			isOwner := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == "owner" })
			if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}, builder.WithPredicates(isOwner)).Named("children").Complete(r); err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)
			api := env.Client(t)
			if err := api.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}); err != nil {
				t.Fatal(err)
			}
			// Wait for the 40 runs (each waits for the cache at most once).
			if err := env.WaitFor(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}},
				"40 reconciles", func() bool { return runs.Load() > 40 }); err != nil {
				t.Fatal(err)
			}
			var children corev1.ConfigMapList
			if err := api.List(t.Context(), &children, client.InNamespace(ns), client.MatchingLabels{"owner": "owner"}); err != nil {
				t.Fatal(err)
			}
			switch {
			case guarded && len(children.Items) != 1:
				t.Errorf("guarded: %d children, want exactly 1", len(children.Items))
			case !guarded && len(children.Items) < 2:
				// The control: without the guard the lagging cache must
				// fool the reconciler, or this test proves nothing.
				t.Errorf("unguarded: %d children; the lagging cache did not produce the bug this test guards against", len(children.Items))
			}
		})
	}
}

// TestALoopNeverActsOnItsOwnStaleWrites runs a reconcile.Loop (finalizer,
// five status steps, events on every transition) under a real manager whose
// cache lags far behind its writes, with the manager's informers in the
// loop's Tracker. Sync never sees a status older than the loop last wrote;
// no write is refused with a conflict; each transition is one event; the
// object ends Ready.
func TestALoopNeverActsOnItsOwnStaleWrites(t *testing.T) {
	reconciletest.CheckGoroutines(t)
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) { testALoopNeverActsOnItsOwnStaleWrites(t, g) })
	}
}

func testALoopNeverActsOnItsOwnStaleWrites(t *testing.T, g guard) {
	ns := env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: &reconciletest.CacheDelay{Delay: cacheLag},
		Options: g.options(nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The Loop guards its client with its own Tracker; given the manager's
	// informers it waits for the cache. With controller-runtime's client
	// the reads it guards are never stale.
	var tracker *freshness.Tracker
	if g == guardFreshness {
		tracker = &freshness.Tracker{Informers: mgr.GetCache(), MaxWait: 10 * time.Second}
	}
	var (
		mu      sync.Mutex
		written = map[string]int{} // the step each widget's status last reached
	)
	fin := &finalizer.Registry[*testapi.Widget]{}
	if err := fin.Register("testing.reconcilekit.io/cleanup", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error { return nil })); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	const steps = 5
	loop := reconcile.New(mgr.GetClient(), "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		step := len(w.Status.Phase)
		mu.Lock()
		defer mu.Unlock()
		if step < written[w.Name] {
			t.Errorf("%s: Sync saw step %d after the loop wrote step %d: a stale read", w.Name, step, written[w.Name])
		}
		if step < steps {
			w.Status.Phase += "+"
			written[w.Name] = step + 1
			return reconcile.Progress{State: reconcile.InProgress, Reason: fmt.Sprintf("Step%d", step+1),
				Requeue: crreconcile.Result{RequeueAfter: 10 * time.Millisecond}}, nil
		}
		return reconcile.Progress{Reason: "Done"}, nil
	})
	loop.APIReader = mgr.GetAPIReader()
	loop.Finalizers = fin
	loop.Recorder = rec
	loop.Events = reconcile.EventsOnTransitions
	loop.Freshness = tracker
	loop.Policy = &requeue.Policy{Observe: func(context.Context, requeue.Decision) {}}
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Named("stale-loop").Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	api := env.Client(t)
	const widgets = 3
	for i := range widgets {
		if err := api.Create(t.Context(), &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("w", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range widgets {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("w", i)}}
		if err := env.WaitForCondition(t.Context(), w, status.TypeReady, metav1.ConditionTrue); err != nil {
			t.Fatal(err)
		}
		// The loop records its event after the write: wait until no
		// reconcile runs any more.
		if err := mgr.WaitConverged(t.Context(), w, "Ready in the cache, no reconcile running", func() bool {
			return status.IsTrue(w, status.TypeReady)
		}); err != nil {
			t.Fatal(err)
		}
		if w.Status.Phase != strings.Repeat("+", steps) || len(w.Finalizers) != 1 {
			t.Errorf("%s: phase %q, finalizers %v", w.Name, w.Status.Phase, w.Finalizers)
		}
	}
	refused := 0
	for _, r := range mgr.Requests.Requests() {
		if r.Code == 409 {
			refused++
			t.Logf("refused: %s", r)
		}
	}
	if refused != 0 {
		t.Errorf("%d writes were refused with a conflict, want 0: no write is sent on a stale copy", refused)
	}
	// Each widget: Step1..Step5 and Done, one event each, none repeated.
	got := map[string]int{}
	for range len(rec.Events) {
		e := <-rec.Events
		got[strings.Fields(e)[1]]++
	}
	for step := 1; step <= steps; step++ {
		if n := got[fmt.Sprintf("Step%d", step)]; n != widgets {
			t.Errorf("events Step%d = %d, want %d (one per widget)", step, n, widgets)
		}
	}
	if got["Done"] != widgets {
		t.Errorf("events Done = %d, want %d", got["Done"], widgets)
	}
}

// TestATrackerForgetsANamespaceWithItsLastObject: a Tracker remembers, per
// informer, how far the informer got in each namespace, and forgets a
// namespace once the informer holds no object of it, however its last
// object went (deleted by this process or by another), as its gauge
// reconcilekit_freshness_entries{map="namespaces"} says: a process that
// works in a namespace of its own for each batch of objects does not keep
// every namespace it ever worked in.
func TestATrackerForgetsANamespaceWithItsLastObject(t *testing.T) {
	gauge := func() float64 {
		return metricstest.Settled(t, "reconcilekit_freshness_entries", map[string]string{"map": "namespaces"})
	}
	before := gauge()
	a, b := env.Namespace(t), env.Namespace(t)
	tracker := &freshness.Tracker{}
	mgr, err := env.NewManager(testenv.ManagerOptions{Options: manager.Options{NewClient: tracker.NewClient,
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{a: {}, b: {}}}}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	c := mgr.GetClient()
	remembers := func(what string, want float64) {
		t.Helper()
		var got float64
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = gauge() - before
			return got == want, nil
		})
		if err != nil {
			t.Errorf("%s: the Tracker remembers %v namespaces, want %v", what, got, want)
		}
	}
	var cms []*corev1.ConfigMap
	for _, key := range []client.ObjectKey{{Namespace: a, Name: "one"}, {Namespace: a, Name: "two"}, {Namespace: b, Name: "three"}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		// A read through the cache: the Tracker watches its informer.
		if err := c.Get(t.Context(), key, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
		cms = append(cms, cm)
	}
	remembers("objects in two namespaces", 2)
	if err := c.Delete(t.Context(), cms[0]); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitGone(t.Context(), cms[0]); err != nil {
		t.Fatal(err)
	}
	remembers("one object of the first namespace deleted, one left", 2)
	if err := c.Delete(t.Context(), cms[1]); err != nil {
		t.Fatal(err)
	}
	remembers("the last object of the first namespace deleted by this process", 1)
	if err := env.Client(t).Delete(t.Context(), cms[2]); err != nil {
		t.Fatal(err)
	}
	remembers("the last object of the second namespace deleted by another", 0)
	goruntime.KeepAlive(tracker)
}
