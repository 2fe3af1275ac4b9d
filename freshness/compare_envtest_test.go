package freshness_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// guard is how a test's manager reads its own writes: the tests below run
// against each, so docs/read-your-writes.md can say where each holds.
type guard string

const (
	unguarded guard = "none"
	// guardFreshness is this package: Tracker.NewClient in the manager's
	// options.
	guardFreshness guard = "freshness"
	// guardControllerRuntime is controller-runtime's own consistency
	// client: client.CacheOptions.EnableReadYourWritesConsistency.
	guardControllerRuntime guard = "controller-runtime"
)

// options returns the manager options of the guard; tracker is the
// freshness Tracker (nil: a new one).
func (g guard) options(tracker *freshness.Tracker) manager.Options {
	switch g {
	case guardFreshness:
		if tracker == nil {
			tracker = &freshness.Tracker{}
		}
		return manager.Options{NewClient: tracker.NewClient}
	case guardControllerRuntime:
		return manager.Options{Client: client.Options{Cache: &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}}}
	}
	return manager.Options{}
}

// TestALoopChildAnotherWriterDeletesIsCreatedAgainInOneReconcile: a Loop
// whose Sync ensures a ConfigMap child, under a real manager, with the
// children's creation events filtered out (as the At filters its Pods'):
// nothing reads the child between its creation and its deletion by another
// writer. The reconcile the deletion triggers reads it as gone, not as a
// cache that lags this process's creation of it, and creates it again at
// once: no reconcile fails, no read is given up as stale.
func TestALoopChildAnotherWriterDeletesIsCreatedAgainInOneReconcile(t *testing.T) {
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			ns := env.Namespace(t)
			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: g.options(nil)})
			if err != nil {
				t.Fatal(err)
			}
			c := mgr.GetClient()
			var (
				mu       sync.Mutex
				outcomes []drift.Operation
				failures []error
			)
			children := drift.NewWriter(c, "freshness-test")
			loop := reconcile.New(c, "freshness-test", func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
				child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-child"},
					Data: map[string]string{"message": w.Spec.Message}}
				out, err := children.Ensure(ctx, child, drift.Owner(w))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, err)
					return reconcile.Progress{}, err
				}
				outcomes = append(outcomes, out.Operation)
				return reconcile.Progress{Reason: "Ensured"}, nil
			})
			loop.APIReader = mgr.GetAPIReader()
			loop.Policy = &requeue.Policy{Observe: func(context.Context, requeue.Decision) {}}
			noCreates := predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}
			if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
				Owns(&corev1.ConfigMap{}, builder.WithPredicates(noCreates)).Named("child-" + string(g)).Complete(mgr.Reconciler(loop)); err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)
			api := env.Client(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "hello"}}
			if err := api.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			if err := env.WaitForCondition(t.Context(), w, status.TypeReady, metav1.ConditionTrue); err != nil {
				t.Fatal(err)
			}
			if err := mgr.WaitConverged(t.Context(), w, "Ready, no reconcile running", func() bool { return status.IsTrue(w, status.TypeReady) }); err != nil {
				t.Fatal(err)
			}
			gaveUp := metricstest.Value(t, "reconcilekit_stale_reads_total", map[string]string{"outcome": "gave_up"})
			mu.Lock()
			outcomes, failures = nil, nil
			mu.Unlock()

			t.Logf("converged %v", time.Now().Format("05.000"))
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-child"}}
			if err := api.Delete(t.Context(), child); err != nil {
				t.Fatal(err)
			}
			if err := env.WaitFor(t.Context(), child, "the child created again", func() bool { return child.UID != "" }); err != nil {
				t.Fatal(err)
			}
			if err := mgr.WaitConverged(t.Context(), w, "no reconcile running", func() bool { return true }); err != nil {
				t.Fatal(err)
			}
			t.Logf("created again %v", time.Now().Format("05.000"))
			mu.Lock()
			defer mu.Unlock()
			if len(failures) != 0 {
				t.Errorf("reconciles failed after the deletion: %v", failures)
			}
			if len(outcomes) == 0 || outcomes[0] != drift.OperationCreated {
				t.Errorf("Ensure after the deletion: %v, want the first to create the child", outcomes)
			}
			if n := metricstest.Value(t, "reconcilekit_stale_reads_total", map[string]string{"outcome": "gave_up"}) - gaveUp; n != 0 {
				t.Errorf("%v reads given up as stale, want none", n)
			}
		})
	}
}

// TestAnObjectAnotherWriterCreatesAgainIsNotMistakenForOurs: this process
// creates a ConfigMap; another writer deletes it and creates another of the
// same name. A read returns the other writer's object, not a wait for ours
// nor an error; once the other writer deletes it too, a read says it is
// gone: the write this process remembers is of an object that no longer
// exists, and nothing of it holds the reads back.
func TestAnObjectAnotherWriterCreatesAgainIsNotMistakenForOurs(t *testing.T) {
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			ns := env.Namespace(t)
			var tracker *freshness.Tracker
			if g == guardFreshness {
				tracker = &freshness.Tracker{MaxWait: 30 * time.Second}
			}
			mgr := runManagerIn(t, ns, g, tracker, nil)
			ctx, c, api := t.Context(), mgr.GetClient(), env.Client(t)
			key := client.ObjectKey{Namespace: ns, Name: "shared"}
			// A first read makes the cache (and the guard) watch ConfigMaps.
			if err := c.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Fatalf("first read: %v, want NotFound", err)
			}
			ours := &corev1.ConfigMap{ObjectMeta: key2meta(key), Data: map[string]string{"by": "us"}}
			if err := c.Create(ctx, ours); err != nil {
				t.Fatal(err)
			}
			if err := api.Delete(ctx, ours); err != nil {
				t.Fatal(err)
			}
			theirs := &corev1.ConfigMap{ObjectMeta: key2meta(key), Data: map[string]string{"by": "them"}}
			if err := api.Create(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			// The cache may say, for a moment, ours, or nothing (it saw the
			// deletion, not yet the new one); it must come to say theirs,
			// and never hold a read back for a write of an object that is
			// gone.
			readUntil := func(what string, done func(*corev1.ConfigMap, error) bool) {
				t.Helper()
				readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				for {
					got := &corev1.ConfigMap{}
					err := c.Get(readCtx, key, got)
					if done(got, err) {
						return
					}
					if err != nil && !apierrors.IsNotFound(err) {
						t.Fatalf("waiting for %s: %v", what, err)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			readUntil("their object", func(got *corev1.ConfigMap, err error) bool { return err == nil && got.UID == theirs.UID })
			if err := api.Delete(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			readUntil("gone", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) })
			if tracker != nil && tracker.Len() != 0 {
				t.Errorf("the tracker remembers %d writes, want none: the object it created is gone", tracker.Len())
			}
		})
	}
}

// runManager starts a manager of guard g (tracker: see guard.options;
// delay, when set, makes its cache lag) in a new namespace until the test
// ends.
func runManager(t *testing.T, g guard, tracker *freshness.Tracker, delay *reconciletest.CacheDelay) (string, *testenv.Manager) {
	t.Helper()
	ns := env.Namespace(t)
	return ns, runManagerIn(t, ns, g, tracker, delay)
}

// runManagerIn is runManager in namespace ns.
func runManagerIn(t *testing.T, ns string, g guard, tracker *freshness.Tracker, delay *reconciletest.CacheDelay) *testenv.Manager {
	t.Helper()
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: delay, Options: g.options(tracker)})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr
}

func key2meta(k client.ObjectKey) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}
}

// TestAReadOfACacheThatDoesNotCatchUp: the cache runs a minute behind.
// A read after this process's write waits at most Tracker.MaxWait and
// returns a StaleError, which requeue.Policy retries quietly, freeing the
// worker; controller-runtime's client waits as long as the context lets it
// (a reconcile's has no deadline), holding the worker until the cache
// catches up.
func TestAReadOfACacheThatDoesNotCatchUp(t *testing.T) {
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			ns, mgr := runManager(t, g, &freshness.Tracker{MaxWait: 500 * time.Millisecond}, &reconciletest.CacheDelay{Delay: time.Minute})
			ctx, c := t.Context(), mgr.GetClient()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"}}
			if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Fatalf("first read: %v", err)
			}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			readCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			err := c.Get(readCtx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			switch g {
			case guardFreshness:
				if !errors.Is(err, freshness.ErrStale) {
					t.Errorf("err = %v, want a StaleError after MaxWait", err)
				}
			case guardControllerRuntime:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v; controller-runtime's client was expected to wait until the context's deadline", err)
				}
			}
		})
	}
}

// TestAWriteOfAnUncachedKindStartsNoInformer: the manager's client reads
// unstructured objects from the API server (controller-runtime's default),
// so no informer watches them. A write of one through freshness's client
// sends that write and nothing else; through controller-runtime's, the
// first write starts an informer of the kind, which lists and watches every
// ConfigMap the manager may see (and needs list and watch permission).
func TestAWriteOfAnUncachedKindStartsNoInformer(t *testing.T) {
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			ns, mgr := runManager(t, g, nil, nil)
			ctx, c := t.Context(), mgr.GetClient()
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("ConfigMap")
			u.SetNamespace(ns)
			u.SetName("plain")
			watches := func() int {
				return mgr.Requests.CountResource(reconciletest.VerbList, "configmaps") + mgr.Requests.CountResource(reconciletest.VerbWatch, "configmaps")
			}
			before := watches()
			if err := c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			started := watches() - before
			switch g {
			case guardFreshness:
				if started != 0 {
					t.Errorf("%d lists and watches of configmaps after an unstructured write, want none", started)
				}
			case guardControllerRuntime:
				if started == 0 {
					t.Errorf("controller-runtime's client was expected to start an informer (list or watch configmaps) on the write")
				}
				t.Logf("controller-runtime: %d list(s) and watch(es) of configmaps started by one unstructured write", started)
			}
		})
	}
}

// TestDeleteAllOfGoesThrough: freshness passes DeleteAllOf to the API
// server (ownership.Prune's callers and cleanup code use it);
// controller-runtime's consistency client refuses it.
func TestDeleteAllOfGoesThrough(t *testing.T) {
	for _, g := range []guard{guardFreshness, guardControllerRuntime} {
		t.Run(string(g), func(t *testing.T) {
			ns, mgr := runManager(t, g, nil, nil)
			err := mgr.GetClient().DeleteAllOf(t.Context(), &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels{"app": "none"})
			switch {
			case g == guardFreshness && err != nil:
				t.Errorf("DeleteAllOf: %v, want it sent", err)
			case g == guardControllerRuntime && err == nil:
				t.Errorf("controller-runtime's client was expected to refuse DeleteAllOf")
			case err != nil:
				t.Logf("%s: %v", g, err)
			}
		})
	}
}
