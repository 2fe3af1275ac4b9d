package requeue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reconcilekit/reconcilekit/requeue"
)

func TestAfterNeverMeansNoRequeue(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want time.Duration
	}{
		{time.Minute, time.Minute},
		{1, 1},
		{0, requeue.MinDelay},
		{-time.Hour, requeue.MinDelay},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(ctrl.Result{RequeueAfter: tt.want}, requeue.After(tt.d)); diff != "" {
			t.Errorf("After(%v) (-want +got):\n%s", tt.d, diff)
		}
	}
}

func TestAtUsesTheInjectedClock(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	tests := []struct {
		name string
		t    time.Time
		want time.Duration
	}{
		{"future", now.Add(90 * time.Minute), 90 * time.Minute},
		{"a nanosecond ahead", now.Add(1), 1},
		{"now", now, requeue.MinDelay},
		{"past", now.Add(-time.Hour), requeue.MinDelay},
		{"zero time", time.Time{}, requeue.MinDelay},
		{"other zone, same instant + 1s", now.Add(time.Second).In(time.FixedZone("x", -5*3600)), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: tt.want}, requeue.At(tt.t, requeue.WithClock(clk))); diff != "" {
				t.Errorf("At (-want +got):\n%s", diff)
			}
		})
	}
	// Moving the clock moves the answer: nothing reads the real time.
	clk.SetTime(now.Add(30 * time.Minute))
	if got := requeue.At(now.Add(90*time.Minute), requeue.WithClock(clk)).RequeueAfter; got != time.Hour {
		t.Errorf("after advancing the clock 30m, At = %v, want 1h", got)
	}
}

func TestAtWithoutAClockUsesTheRealClock(t *testing.T) {
	for name, opts := range map[string][]requeue.Option{
		"no option":  nil,
		"nil clock":  {requeue.WithClock(nil)},
		"nil option": {nil},
	} {
		t.Run(name, func(t *testing.T) {
			before := time.Now()
			got := requeue.At(before.Add(time.Hour), opts...).RequeueAfter
			elapsed := time.Since(before)
			if got > time.Hour || got < time.Hour-elapsed {
				t.Errorf("At(now+1h) = %v, want within [1h-%v, 1h]", got, elapsed)
			}
		})
	}
}

// TestEveryJitterStaysInRangeAndSpreads draws many resyncs concurrently
// (under -race this also proves the randomness is safe to share) and checks
// every one is within d±jitter and that they are spread on both sides of d.
func TestEveryJitterStaysInRangeAndSpreads(t *testing.T) {
	const d, jitter = 10 * time.Minute, time.Minute
	const goroutines, each = 8, 500
	var mu sync.Mutex
	seen := map[time.Duration]bool{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				got := requeue.Every(d, jitter).RequeueAfter
				mu.Lock()
				seen[got] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	below, above := 0, 0
	for got := range seen {
		if got < d-jitter || got > d+jitter {
			t.Fatalf("Every(%v, %v) = %v, outside the jitter range", d, jitter, got)
		}
		if got < d {
			below++
		} else if got > d {
			above++
		}
	}
	// 4000 draws from a range of 1.2e11 values: a broken source would give
	// a handful of distinct values or one side only.
	if len(seen) < goroutines*each/2 || below == 0 || above == 0 {
		t.Errorf("Every gave %d distinct values (%d below d, %d above): not spread", len(seen), below, above)
	}
}

func TestEveryEdgeCases(t *testing.T) {
	tests := []struct {
		name      string
		d, jitter time.Duration
		lo, hi    time.Duration
	}{
		{"no jitter is exact", time.Minute, 0, time.Minute, time.Minute},
		{"negative jitter is none", time.Minute, -time.Second, time.Minute, time.Minute},
		{"jitter above d is capped at d, never zero", time.Second, time.Hour, requeue.MinDelay, 2 * time.Second},
		{"no period, no resync", 0, time.Second, 0, 0},
		{"negative period, no resync", -time.Minute, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 {
				r := requeue.Every(tt.d, tt.jitter)
				if r.RequeueAfter < tt.lo || r.RequeueAfter > tt.hi {
					t.Fatalf("Every(%v, %v) = %v, want within [%v, %v]", tt.d, tt.jitter, r.RequeueAfter, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		in   []ctrl.Result
		want ctrl.Result
	}{
		{"nothing", nil, ctrl.Result{}},
		{"zero results are neutral", []ctrl.Result{{}, {RequeueAfter: time.Minute}, {}}, ctrl.Result{RequeueAfter: time.Minute}},
		{"soonest wins", []ctrl.Result{{RequeueAfter: time.Hour}, {RequeueAfter: time.Second}, {RequeueAfter: time.Minute}}, ctrl.Result{RequeueAfter: time.Second}},
		{"negative is neutral", []ctrl.Result{{RequeueAfter: -time.Second}, {RequeueAfter: time.Minute}}, ctrl.Result{RequeueAfter: time.Minute}},
		{"deprecated Requeue is kept", []ctrl.Result{{Requeue: true}, {RequeueAfter: time.Minute}}, ctrl.Result{Requeue: true, RequeueAfter: time.Minute}},
		{"highest priority", []ctrl.Result{{Priority: ptr.To(-1)}, {Priority: ptr.To(5)}, {}}, ctrl.Result{Priority: ptr.To(5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, requeue.Merge(tt.in...)); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
			// Order does not matter.
			rev := make([]ctrl.Result, len(tt.in))
			for i, r := range tt.in {
				rev[len(tt.in)-1-i] = r
			}
			if diff := cmp.Diff(tt.want, requeue.Merge(rev...)); diff != "" {
				t.Errorf("Merge reversed (-want +got):\n%s", diff)
			}
		})
	}
	// The merged Priority does not alias an input.
	p := ptr.To(3)
	got := requeue.Merge(ctrl.Result{Priority: p})
	*p = 9
	if *got.Priority != 3 {
		t.Errorf("Merge aliased its input's Priority")
	}
}
