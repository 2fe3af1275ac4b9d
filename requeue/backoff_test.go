package requeue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/requeue"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

func TestBackoffDoublesUpToMaxAndForgets(t *testing.T) {
	b := &requeue.Backoff{Base: time.Second, Max: 10 * time.Second, Jitter: -1}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next(req("a")))
	}
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if n := b.Failures(req("a")); n != 6 {
		t.Errorf("Failures = %d, want 6", n)
	}
	if d := b.Next(req("b")); d != time.Second {
		t.Errorf("another key starts at %v, want Base", d)
	}
	b.Forget(req("a"))
	if n := b.Failures(req("a")); n != 0 {
		t.Errorf("Failures after Forget = %d, want 0", n)
	}
	if d := b.Next(req("a")); d != time.Second {
		t.Errorf("after Forget, Next = %v, want Base", d)
	}
}

func TestBackoffZeroValueDefaults(t *testing.T) {
	var b requeue.Backoff
	for i := range 40 { // far past the cap, without overflow
		d := b.Next(req("a"))
		ceiling := min(requeue.DefaultBackoffBase<<min(i, 30), requeue.DefaultBackoffMax)
		floor := time.Duration(float64(ceiling) * (1 - requeue.DefaultBackoffJitter))
		if d < floor || d > ceiling {
			t.Fatalf("failure %d: delay %v, want within [%v, %v]", i+1, d, floor, ceiling)
		}
	}
	var nilBackoff *requeue.Backoff
	nilBackoff.Forget(req("a")) // must not panic
}

// TestBackoffBoundedMemory proves the tracker never holds more than MaxKeys
// requests and forgets the least recently failed first.
func TestBackoffBoundedMemory(t *testing.T) {
	b := &requeue.Backoff{MaxKeys: 3, Jitter: -1}
	b.Next(req("a"))
	b.Next(req("b"))
	b.Next(req("c"))
	b.Next(req("a")) // a is now the most recent
	b.Next(req("d")) // evicts b
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	got := map[string]int{}
	for _, k := range []string{"a", "b", "c", "d"} {
		got[k] = b.Failures(req(k))
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 0, "c": 1, "d": 1}, got); diff != "" {
		t.Errorf("failures after eviction (-want +got):\n%s", diff)
	}
}

// TestBackoffConcurrent hammers one tracker from many goroutines (run with
// -race): counts stay exact per key, delays stay within bounds, memory stays
// bounded.
func TestBackoffConcurrent(t *testing.T) {
	b := &requeue.Backoff{Base: time.Millisecond, Max: time.Second, MaxKeys: 50}
	const goroutines, keys, rounds = 8, 20, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				r := req(fmt.Sprintf("k%d", (g*rounds+i)%keys))
				if d := b.Next(r); d <= 0 || d > time.Second {
					t.Errorf("Next = %v, want within (0, 1s]", d)
					return
				}
				if i%50 == 49 {
					b.Forget(r)
				}
				_ = b.Len()
			}
		})
	}
	// Keys beyond MaxKeys, concurrently, to exercise eviction.
	wg.Go(func() {
		for i := range 500 {
			b.Next(req(fmt.Sprintf("extra%d", i)))
		}
	})
	wg.Wait()
	if b.Len() > 50 {
		t.Errorf("Len = %d, want <= MaxKeys 50", b.Len())
	}
	// Exactness: with no eviction pressure and no Forget, counts add up.
	c := &requeue.Backoff{}
	var wg2 sync.WaitGroup
	for range goroutines {
		wg2.Go(func() {
			for range rounds {
				c.Next(req("shared"))
			}
		})
	}
	wg2.Wait()
	if n := c.Failures(req("shared")); n != goroutines*rounds {
		t.Errorf("Failures = %d, want %d", n, goroutines*rounds)
	}
}
