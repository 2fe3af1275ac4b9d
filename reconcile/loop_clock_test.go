package reconcile_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// TestLoopClockReachesItsOwnPolicy: a Loop without a Policy of the user's
// tells ReportAfter's time by its Clock. A transient failure is kept off
// the conditions until it has lasted the default ReportAfter (10s) on the
// Loop's clock: stepping the test clock past it reports the failure on the
// next reconcile, with no real time passing. (When the Loop's own Policy
// read the real clock, the failure stayed unreported.)
func TestLoopClockReachesItsOwnPolicy(t *testing.T) {
	c := env.Client(t)
	req := createWidget(t, c, env.Namespace(t), "flaky")
	clk := clocktesting.NewFakePassiveClock(time.Now())
	loop := reconcile.New(c, "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
		return reconcile.Progress{}, apierrors.NewServiceUnavailable("the backend restarts")
	})
	loop.Clock = clk

	if _, err := loop.Reconcile(t.Context(), req); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("first failure: Reconcile = %v, want the transient error", err)
	}
	if w := getWidget(t, c, req); len(w.Status.Conditions) != 0 {
		t.Fatalf("a transient failure of no duration is on the conditions: %+v", w.Status.Conditions)
	}

	clk.SetTime(clk.Now().Add(requeue.DefaultReportAfter + time.Second))
	if _, err := loop.Reconcile(t.Context(), req); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("after ReportAfter: Reconcile = %v, want the transient error", err)
	}
	w := getWidget(t, c, req)
	rc, _ := status.FindCondition(w, status.TypeReconciling)
	if rc.Status != metav1.ConditionTrue || rc.Reason != "ServiceUnavailable" {
		t.Errorf("after the failure lasted ReportAfter by the Loop's clock: conditions = %+v, want Reconciling=True ServiceUnavailable", w.Status.Conditions)
	}
}

// laggingReads is a client whose reads, once frozen, return the object as
// it was then, the way an informer cache that has not caught up does, while
// writes go to the API server.
type laggingReads struct {
	client.Client
	mu     sync.Mutex
	frozen *testapi.Widget
}

func newLaggingReads(c client.Client) *laggingReads {
	l := &laggingReads{}
	l.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			l.mu.Lock()
			frozen := l.frozen
			l.mu.Unlock()
			if w, ok := obj.(*testapi.Widget); ok && frozen != nil && client.ObjectKeyFromObject(frozen) == key {
				frozen.DeepCopyInto(w)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	return l
}

func (l *laggingReads) freeze(w *testapi.Widget) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = w.DeepCopy()
}

// TestLoopClockReachesItsOwnFreshnessTracker: a Loop without a Tracker of
// the user's remembers its writes for the Tracker's TTL by its Clock. A
// read older than the Loop's last status write is a stale read (a quiet
// requeue, Sync not called) until the write is TTL old on the Loop's
// clock: stepping the test clock past it lets the next reconcile act on
// what it reads. (When the Loop's own Tracker read the real clock, the
// read stayed stale for two real minutes.)
func TestLoopClockReachesItsOwnFreshnessTracker(t *testing.T) {
	c := env.Client(t)
	req := createWidget(t, c, env.Namespace(t), "v1")
	clk := clocktesting.NewFakePassiveClock(time.Now())
	reads := newLaggingReads(env.Client(t))
	var syncs atomic.Int32
	loop := reconcile.New(reads, "loop-test", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		syncs.Add(1)
		w.Status.Phase = w.Spec.Message
		return reconcile.Progress{}, nil
	})
	loop.APIReader = c // the writer's re-read after a conflict asks the server
	loop.Clock = clk

	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	// The spec changes, and the cache stops after that change...
	w := getWidget(t, c, req)
	w.Spec.Message = "v2"
	if err := c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	reads.freeze(getWidget(t, c, req))
	// ...so the Loop's status write for it is newer than any read...
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := getWidget(t, c, req).Status.Phase; got != "v2" {
		t.Fatalf("status.phase = %q, want v2 written", got)
	}
	// ...and the next read is stale.
	syncs.Store(0)
	if res, err := loop.Reconcile(t.Context(), req); err != nil || res.RequeueAfter <= 0 || syncs.Load() != 0 {
		t.Fatalf("a read older than the Loop's write: Reconcile = %+v, %v with %d syncs; want a quiet requeue, Sync not called", res, err, syncs.Load())
	}

	clk.SetTime(clk.Now().Add(freshness.DefaultTTL + time.Second))
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	if syncs.Load() != 1 {
		t.Errorf("after the write is TTL old by the Loop's clock: %d syncs, want 1 (the Tracker forgot the write)", syncs.Load())
	}
}
