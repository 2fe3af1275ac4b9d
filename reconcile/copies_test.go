package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/status"
)

// cachedWidgets returns a client that reads the Widgets of ns from a cache
// built with opts, as a manager's client does, and the cache, started.
func cachedWidgets(t *testing.T, ns string, opts cache.Options) (client.Client, cache.Cache) {
	t.Helper()
	env.Require(t)
	opts.Scheme = env.Scheme
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	if _, err := c.GetInformer(ctx, &testapi.Widget{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	cl, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return cl, c
}

// TestLoopNeverChangesTheCachedObject: the Loop reads the cache's own
// object and gives Sync a copy; a Sync that changes everything it is given
// (labels, spec, status, conditions) while another goroutine reads the
// cache never changes the cache's object, and a converged object is still
// written nothing. Run with -race.
func TestLoopNeverChangesTheCachedObject(t *testing.T) {
	ns := env.Namespace(t)
	c, cc := cachedWidgets(t, ns, cache.Options{})
	var counter reconciletest.Counter
	loop := reconcile.New(counter.Wrap(c), "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		if w.APIVersion == "" || w.Kind != "Widget" {
			t.Errorf("Sync got the Widget without its kind: %q %q", w.APIVersion, w.Kind)
		}
		// Everything Sync was given, changed where the cache would share
		// it if it were the cache's: a map, a list, nested structs.
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		w.Labels["sync"] = "was here"
		w.Spec.Message = "changed by Sync"
		w.Finalizers = append(w.Finalizers, "sync/was-here")
		for i := range w.Status.Conditions {
			w.Status.Conditions[i].Message = "changed by Sync"
		}
		w.Status.Phase = "Synced"
		return reconcile.Progress{State: reconcile.Done, Reason: "Synced", Message: "done"}, nil
	})
	req := createWidget(t, env.Client(t), ns, "cached")
	stored := func() *testapi.Widget {
		w := &testapi.Widget{}
		_ = cc.Get(t.Context(), req.NamespacedName, w, client.UnsafeDisableDeepCopy)
		return w
	}
	waitStored := func(what string, ok func(*testapi.Widget) bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return ok(stored()), nil
		}); err != nil {
			t.Fatalf("the cache never showed %s", what)
		}
	}
	waitStored("the Widget", func(w *testapi.Widget) bool { return w.Name != "" })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // a reader of the cache, all along
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = stored().DeepCopy()
		}
	})
	for i := range 4 {
		if _, err := loop.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("reconcile %d: %v", i+1, err)
		}
		waitStored("the Loop's status write", func(w *testapi.Widget) bool { return w.Status.Phase == "Synced" && status.IsTrue(w, status.TypeReady) })
	}
	close(stop)
	wg.Wait()

	got := stored()
	if _, ok := got.Labels["sync"]; ok || got.Spec.Message != "cached" || len(got.Finalizers) != 0 {
		t.Errorf("the cache's object carries Sync's changes: labels %v, message %q, finalizers %v", got.Labels, got.Spec.Message, got.Finalizers)
	}
	for _, cond := range got.Status.Conditions {
		if cond.Message == "changed by Sync" {
			t.Errorf("the cache's condition %s carries Sync's change", cond.Type)
		}
	}
	// The status was written once; the later reconciles found nothing to
	// write (Sync's changes to the rest are not status).
	if w := counter.Writes(); len(w) != 1 {
		t.Errorf("%d writes, want 1 (the first status): %v", len(w), w)
	}
	server := &testapi.Widget{}
	if err := env.Client(t).Get(t.Context(), req.NamespacedName, server); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(server.Status, got.Status); diff != "" {
		t.Errorf("the cache's status differs from the server's (-server +cache):\n%s", diff)
	}
}

// TestLoopRefusesAPart: a Loop whose cache keeps its kind in part
// (diet.Fields) would act on what the cache left out: it refuses, with a
// permanent error wrapping diet.ErrPartial, and writes nothing.
func TestLoopRefusesAPart(t *testing.T) {
	ns := env.Namespace(t)
	part, err := diet.Fields(&testapi.Widget{}, "status.phase")
	if err != nil {
		t.Fatal(err)
	}
	c, cc := cachedWidgets(t, ns, cache.Options{ByObject: map[client.Object]cache.ByObject{&testapi.Widget{}: {Transform: part}}})
	var counter reconciletest.Counter
	loop := reconcile.New(counter.Wrap(c), "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
		t.Error("Sync ran on a part")
		return reconcile.Progress{}, nil
	})
	req := createWidget(t, env.Client(t), ns, "part")
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return cc.Get(ctx, req.NamespacedName, &testapi.Widget{}) == nil, nil
	}); err != nil {
		t.Fatal("the cache never held the Widget")
	}
	_, err = loop.Reconcile(t.Context(), req)
	if class, _ := errors.Classify(err); !errors.Is(err, diet.ErrPartial) || class != errors.ClassPermanent {
		t.Errorf("Reconcile of a part: %v, want diet.ErrPartial, permanent", err)
	}
	if w := counter.Writes(); len(w) != 0 {
		t.Errorf("%d writes, want none: %v", len(w), w)
	}
}
