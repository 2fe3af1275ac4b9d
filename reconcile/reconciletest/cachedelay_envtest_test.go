package reconciletest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// TestAPIServerCacheDelayStaleReadAfterUpdate proves the delayed cache on
// a real manager and API server: a cached Get right after an Update
// returns the object before the update for as long as the delay holds the
// watch event, and the updated object once it passes; two updates held
// together reach the cache's event handlers in order.
func TestAPIServerCacheDelayStaleReadAfterUpdate(t *testing.T) {
	ns := env.Namespace(t)
	api := env.Client(t)
	ctx := t.Context()
	w := widget(ns, "w", "v1")
	if err := api.Create(ctx, w); err != nil {
		t.Fatal(err)
	}

	clk := testingclock.NewFakeClock(time.Now())
	delay := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
	copts, err := delay.CacheOptions(cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      copts,
	})
	if err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	// The widget existed before the informer started: it is part of the
	// watch's initial state, which is not delayed.
	cached := mgr.GetClient()
	key := client.ObjectKeyFromObject(w)
	read := func() string {
		t.Helper()
		var got testapi.Widget
		if err := cached.Get(ctx, key, &got); err != nil {
			t.Fatalf("cached get: %v", err)
		}
		return got.Spec.Message
	}
	if got := read(); got != "v1" {
		t.Fatalf("first cached read = %q, want v1", got)
	}
	var mu sync.Mutex
	var seen []string
	inf, err := mgr.GetCache().GetInformer(ctx, &testapi.Widget{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, obj.(*testapi.Widget).Spec.Message)
	}}); err != nil {
		t.Fatal(err)
	}

	update := func(message string) {
		t.Helper()
		if err := api.Get(ctx, key, w); err != nil {
			t.Fatal(err)
		}
		w.Spec.Message = message
		if err := api.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// waitHeld waits until the delay holds the event of the update that
	// returned w.
	waitHeld := func() {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, bound, true, func(context.Context) (bool, error) {
			return delay.Holds(w), nil
		})
		if err != nil {
			t.Fatalf("the event of resourceVersion %s is not held (%d held)", w.ResourceVersion, delay.Pending())
		}
	}

	update("v2")
	if got := read(); got != "v1" {
		t.Errorf("cached read right after the update = %q, want the old v1", got)
	}
	waitHeld() // the update's event arrived, and is held
	if got := read(); got != "v1" {
		t.Errorf("cached read while the delay holds the update = %q, want the old v1", got)
	}
	update("v3")
	waitHeld()
	if got := read(); got != "v1" {
		t.Errorf("cached read after a second update = %q, want the old v1", got)
	}

	clk.Step(time.Minute)
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		return read() == "v3", nil
	})
	if err != nil {
		t.Fatalf("the cache never caught up: reads %q, want v3", read())
	}
	// The informer updates its store before it calls the handlers: the
	// read above can see v3 before the handler has been told of it.
	handled := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		return handled() >= 2, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"v2", "v3"}, seen); diff != "" {
		t.Errorf("updates seen by the cache's handlers (-want +got):\n%s", diff)
	}
}
