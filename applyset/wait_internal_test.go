package applyset

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWaitIndex proves what the index of waiting parents keeps: parents by
// group, woken by every event of the group, forgotten when an Apply finds
// them waiting for nothing, and beyond the bound.
func TestWaitIndex(t *testing.T) {
	var w waitIndex
	a, b, c := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}, types.NamespacedName{Namespace: "ns", Name: "c"}
	w.set(a, []string{"monitoring.coreos.com", "example.com", "example.com"}, 10)
	w.set(b, []string{"example.com"}, 10)
	for range 3 { // a burst of events: each wakes both, whatever ran meanwhile
		if diff := cmp.Diff([]types.NamespacedName{a, b}, w.waiting("example.com")); diff != "" {
			t.Errorf("waiting (-want +got):\n%s", diff)
		}
	}
	w.set(a, []string{"example.com"}, 10)
	if got := w.waiting("monitoring.coreos.com"); len(got) != 0 {
		t.Errorf("a waits no longer for monitoring.coreos.com, and was woken: %v", got)
	}
	w.set(a, nil, 10)
	w.set(b, nil, 10)
	if n := w.len(); n != 0 {
		t.Errorf("%d parents remembered after the last one waits for nothing", n)
	}
	for _, p := range []types.NamespacedName{a, b, c} {
		w.set(p, []string{"example.com"}, 2)
	}
	if n := w.len(); n != 2 {
		t.Errorf("%d parents remembered, bound 2", n)
	}
}

// TestEnqueueWaitingWakesAgainAfterDiscoveryLag proves a CRD's event wakes
// a waiting parent at once and again 1, 5 and 15 seconds later by the
// Set's clock (the API server's discovery serves a new kind a moment after
// its CRD is Established), that a burst of events schedules those wake-ups
// once, and that a parent waiting for another group is not woken.
func TestEnqueueWaitingWakesAgainAfterDiscoveryLag(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := New(nil, "test")
	s.Clock = clk
	waiter, other := types.NamespacedName{Namespace: "ns", Name: "app"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	s.waiting.set(waiter, []string{"monitoring.coreos.com"}, 10)
	s.waiting.set(other, []string{"example.com"}, 10)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	take := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for q.Len() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if q.Len() != 1 {
			t.Fatalf("%s: %d requests queued, want 1", what, q.Len())
		}
		r, _ := q.Get()
		q.Done(r)
		if r.NamespacedName != waiter {
			t.Fatalf("%s: woke %v, want %v", what, r, waiter)
		}
	}
	crd := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"}}
	h := s.EnqueueWaiting()
	for range 3 { // created, names accepted, established: a burst
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: crd, ObjectNew: crd}, q)
	}
	take("the event")
	for _, step := range []time.Duration{time.Second, 4 * time.Second, 10 * time.Second} {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(step)
		take(fmt.Sprintf("%s later", clk.Since(time.Unix(0, 0))))
	}
	time.Sleep(50 * time.Millisecond)
	if clk.HasWaiters() || q.Len() != 0 {
		t.Errorf("after the last wake-up: waiters %v, %d requests queued; the burst scheduled its wake-ups more than once", clk.HasWaiters(), q.Len())
	}
}

// TestAForgottenParentIsNotWokenAgain proves the wake-ups after the
// discovery lag go only to a parent that still waits for the group: one
// found gone after the first wake-up (Forget) gets none, and one whose
// Apply found the kind installed gets none either; their timers end.
func TestAForgottenParentIsNotWokenAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget func(s *Set, p types.NamespacedName)
	}{
		{"gone", func(s *Set, p types.NamespacedName) { s.Forget(p) }},
		{"waits for nothing", func(s *Set, p types.NamespacedName) { s.waiting.set(p, nil, 10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			s := New(nil, "test")
			s.Clock = clk
			p := types.NamespacedName{Namespace: "ns", Name: "app"}
			s.waiting.set(p, []string{"monitoring.coreos.com"}, 10)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			crd := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"}}
			s.EnqueueWaiting().Create(context.Background(), event.CreateEvent{Object: crd}, q)
			if q.Len() != 1 {
				t.Fatalf("the event queued %d requests, want the parent's", q.Len())
			}
			r, _ := q.Get()
			q.Done(r)
			tc.forget(s, p)
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
			clk.Step(time.Second)
			// The timer goroutine ends without adding, and marks the
			// parent's wake-ups done (the next event schedules them anew);
			// one that wakes the parent again queues it instead.
			ended := false
			for deadline := time.Now().Add(10 * time.Second); q.Len() == 0 && time.Now().Before(deadline); {
				if ended = s.waiting.schedule(p); ended {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if q.Len() != 0 || !ended {
				t.Errorf("after the lag: %d requests queued, its wake-ups ended %v; want none queued, and ended", q.Len(), ended)
			}
		})
	}
}
