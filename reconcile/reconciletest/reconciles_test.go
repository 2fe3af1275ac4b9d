package reconciletest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// TestReconcileCounterCountsPerObjectUnderConcurrency: runs from several
// workers at once are counted per object, a run is counted once it has
// returned, and Running counts the runs in between.
func TestReconcileCounterCountsPerObjectUnderConcurrency(t *testing.T) {
	var runs rt.ReconcileCounter
	inside := make(chan struct{})
	release := make(chan struct{})
	r := runs.Wrap(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "slow" {
			inside <- struct{}{}
			<-release
		}
		return reconcile.Result{}, errors.New("the error is passed on")
	}))
	slow := types.NamespacedName{Namespace: "ns", Name: "slow"}
	go func() { _, _ = r.Reconcile(t.Context(), reconcile.Request{NamespacedName: slow}) }()
	<-inside
	if runs.Running() != 1 || runs.Count(slow) != 0 {
		t.Errorf("during the slow run: running %d, count %d; want 1 and 0", runs.Running(), runs.Count(slow))
	}

	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: []string{"a", "b"}[i%2]}}
			if _, err := r.Reconcile(t.Context(), req); err == nil {
				t.Error("the reconciler's error was lost")
			}
		})
	}
	wg.Wait()
	close(release)
	if err := runs.Wait(t.Context(), slow, 1); err != nil {
		t.Fatal(err)
	}
	want := map[types.NamespacedName]int{{Namespace: "ns", Name: "a"}: 20, {Namespace: "ns", Name: "b"}: 20, slow: 1}
	if diff := cmp.Diff(want, runs.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if runs.Total() != 41 || runs.Running() != 0 {
		t.Errorf("total %d, running %d; want 41 and 0", runs.Total(), runs.Running())
	}
	runs.Reset()
	if runs.Total() != 0 || len(runs.Counts()) != 0 {
		t.Errorf("after Reset: total %d, counts %v", runs.Total(), runs.Counts())
	}
}

// TestReconcileCounterWait: Wait returns once the count is reached, woken
// by the run; when ctx ends first it says how many runs it saw.
func TestReconcileCounterWait(t *testing.T) {
	var runs rt.ReconcileCounter
	r := runs.Wrap(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	key := types.NamespacedName{Namespace: "ns", Name: "w"}
	waited := make(chan error, 1)
	go func() { waited <- runs.Wait(t.Context(), key, 2) }()
	for range 2 {
		_, _ = r.Reconcile(t.Context(), reconcile.Request{NamespacedName: key})
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait for 2 runs after 2 runs: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := runs.Wait(ctx, key, 3)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `waiting for 3 reconciles of "ns/w", saw 2`) {
		t.Errorf("err = %v, want one that says 3 were awaited, 2 seen, and wraps context.Canceled", err)
	}
}
