package reconciletest

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReconcileCounter counts the runs of a reconciler per object, under a
// running manager as well as in a direct call. controller-runtime's own
// metric (controller_runtime_reconcile_total) counts per controller only,
// and process-wide; this counts per object, per test.
//
// Its zero value is ready to use, and it is safe for concurrent use (a
// controller with several workers). A ReconcileCounter must not be copied
// after first use.
type ReconcileCounter struct {
	mu      sync.Mutex
	runs    map[types.NamespacedName]int
	total   int
	running int
	// ran is closed and replaced after every run, to wake Wait.
	ran chan struct{}
}

// Wrap returns a reconciler that calls r and counts the run once r has
// returned: whatever r wrote has been sent by the time the count moves.
//
//	err := ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}).Complete(counter.Wrap(r))
func (c *ReconcileCounter) Wrap(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		c.start()
		defer c.done(req.NamespacedName)
		return r.Reconcile(ctx, req)
	})
}

func (c *ReconcileCounter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running++
}

func (c *ReconcileCounter) done(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[types.NamespacedName]int{}
	}
	c.runs[key]++
	c.total++
	c.running--
	if c.ran != nil {
		close(c.ran)
		c.ran = nil
	}
}

// Count returns how many times the object with the key was reconciled.
func (c *ReconcileCounter) Count(key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

// Total returns how many reconciles ran, over every object.
func (c *ReconcileCounter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Running returns how many reconciles have started and not yet returned.
func (c *ReconcileCounter) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

// Counts returns the number of reconciles of each object reconciled so far.
func (c *ReconcileCounter) Counts() map[types.NamespacedName]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.runs)
}

// Reset forgets every count (not the reconciles still running).
func (c *ReconcileCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs, c.total = nil, 0
}

// Wait blocks until the object with the key has been reconciled at least n
// times, or ctx ends; the error then says how many runs it saw and wraps
// ctx's error. It is woken by each run, not by polling.
func (c *ReconcileCounter) Wait(ctx context.Context, key types.NamespacedName, n int) error {
	for {
		c.mu.Lock()
		got := c.runs[key]
		if got >= n {
			c.mu.Unlock()
			return nil
		}
		if c.ran == nil {
			c.ran = make(chan struct{})
		}
		ran := c.ran
		c.mu.Unlock()
		select {
		case <-ran:
		case <-ctx.Done():
			return fmt.Errorf("reconciletest: waiting for %d reconciles of %q, saw %d: %w", n, key, got, context.Cause(ctx))
		}
	}
}
