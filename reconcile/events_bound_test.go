package reconcile_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/recorder"
	"github.com/reconcilekit/reconcilekit/requeue"
)

// countingRecorder counts the events a Loop records.
type countingRecorder struct {
	*recorder.Recorder
	recorded atomic.Int64
}

func (c *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	c.recorded.Add(1)
	c.Recorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// TestAnErrorRepeatedForAnHourWritesABoundedNumberOfEvents reconciles a
// Widget whose Sync fails at every reconcile, with a message that changes
// each time (so that each reconcile writes the status, a new
// resourceVersion, and records a Warning: the worst case), every 10 s of
// the Recorder's clock for an hour. The API server receives a bounded
// number of Event writes, not one per reconcile: the first occurrence's
// create, the patch that makes it a series, a write of the count at each
// refresh (every 30 minutes) and one when the series ends (6 minutes
// idle), 5 in all; and it holds one Event whose series counts every
// reconcile. With client-go's key (the object's resourceVersion in it),
// each reconcile would create an Event.
func TestAnErrorRepeatedForAnHourWritesABoundedNumberOfEvents(t *testing.T) {
	const (
		every   = 10 * time.Second
		lasting = time.Hour
		n       = int(lasting / every)
		// A create, the series patch, a count per refresh (30 min), the
		// count at the end: docs/memory.md, "Events".
		bound = 2 + int(lasting/(30*time.Minute)) + 1
	)
	base := env.Client(t)
	ns := env.Namespace(t)
	var writes atomic.Int64
	counted := func(err error) error {
		if err == nil {
			writes.Add(1)
		}
		return err
	}
	events := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return counted(c.Create(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return counted(c.Patch(ctx, obj, patch, opts...))
		},
	})
	fc := clocktesting.NewFakeClock(time.Now())
	rec := &countingRecorder{Recorder: recorder.New(events, "event-bound-test")}
	rec.Clock = fc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	attempt := 0
	loop := reconcile.New(base, "event-bound-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
		attempt++
		return reconcile.Progress{}, errors.Transient(fmt.Errorf("attempt %d: the backend refused", attempt))
	})
	loop.Policy = &requeue.Policy{ReportAfter: -1} // reported at the first failure
	loop.Recorder = rec
	req := createWidgetNamed(t, base, ns, "failing")
	for range n {
		if _, err := loop.Reconcile(t.Context(), req); err == nil {
			t.Fatal("a reconcile of the failing Widget returned no error")
		}
		fc.Step(every)
	}
	if got := rec.recorded.Load(); got != int64(n) {
		t.Fatalf("the Loop recorded %d events in %d reconciles, want one each (the worst case this test is about)", got, n)
	}
	// The series ends once idle for 6 minutes: its count is written then.
	fc.Step(7 * time.Minute)
	var stored eventsv1.EventList
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := base.List(ctx, &stored, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(stored.Items) == 1 && stored.Items[0].Series != nil && stored.Items[0].Series.Count == int32(n), nil
	}); err != nil {
		var got []string
		for _, ev := range stored.Items[:min(3, len(stored.Items))] {
			got = append(got, fmt.Sprintf("%s (series %+v)", ev.Name, ev.Series))
		}
		t.Fatalf("%d Events stored after %d failing reconciles, %d writes (the first: %v; %v); want one, its series counting %d",
			len(stored.Items), n, writes.Load(), got, err, n)
	}
	if got := writes.Load(); got > int64(bound) {
		t.Errorf("%d Event writes for an error repeated at each of %d reconciles over %s, want at most %d", got, n, lasting, bound)
	}
	t.Logf("%d reconciles over %s: %d Event writes, one Event of series count %d", n, lasting, writes.Load(), stored.Items[0].Series.Count)
}
