package drift

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

// observe reports one drift to h at the time of its clock.
func observe(h *HotLoopDetector, key string, fingerprint uint64) (now, until time.Time, hold, tripped bool) {
	now = h.clockOr(nil).Now()
	until, hold, tripped = h.observe(key, fingerprint, now, h.clockOr(nil))
	return now, until, hold, tripped
}

func TestHotLoopDetectorTripsOnTheThresholdthSameDrift(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := &HotLoopDetector{Threshold: 3, Window: time.Minute, HoldOff: time.Hour, Clock: clk}
	for i := range 2 {
		if _, _, hold, _ := observe(h, "k", 7); hold {
			t.Fatalf("drift %d held back, want the first %d let through", i+1, 2)
		}
		clk.SetTime(clk.Now().Add(10 * time.Second))
	}
	_, until, hold, tripped := observe(h, "k", 7)
	if !hold || !tripped {
		t.Fatalf("3rd same drift: hold=%v tripped=%v, want both", hold, tripped)
	}
	if want := clk.Now().Add(time.Hour); !until.Equal(want) {
		t.Errorf("until = %v, want %v", until, want)
	}
	// Any drift of the object is held during the hold-off, without tripping again.
	if _, _, hold, tripped := observe(h, "k", 8); !hold || tripped {
		t.Errorf("during hold-off: hold=%v tripped=%v, want held, not tripped again", hold, tripped)
	}
	clk.SetTime(until)
	if _, _, hold, _ := observe(h, "k", 7); hold {
		t.Errorf("after hold-off: held, want let through and counting anew")
	}
}

func TestHotLoopDetectorIgnoresChangingDesiredAndSlowDrifts(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := &HotLoopDetector{Threshold: 2, Window: time.Minute, Clock: clk}
	// A user editing desired: each drift has other desired values.
	for fp := range uint64(5) {
		if _, _, hold, _ := observe(h, "a", fp); hold {
			t.Fatalf("changing desired (fingerprint %d) held back", fp)
		}
	}
	// The same drift, but further apart than the window.
	for i := range 5 {
		if _, _, hold, _ := observe(h, "b", 1); hold {
			t.Fatalf("slow drift %d held back", i)
		}
		clk.SetTime(clk.Now().Add(2 * time.Minute))
	}
}

func TestHotLoopDetectorMemoryIsBounded(t *testing.T) {
	h := &HotLoopDetector{MaxObjects: 3, Threshold: 2, Clock: clocktesting.NewFakePassiveClock(time.Unix(0, 0))}
	observe(h, "keep", 1)
	for i := range 100 {
		observe(h, fmt.Sprint("obj", i), 1)
		observe(h, "keep", 9) // recently seen: never evicted
	}
	if n := len(h.entries); n != 3 || h.lru.Len() != 3 {
		t.Errorf("%d entries, %d in LRU; want MaxObjects = 3", n, h.lru.Len())
	}
	if _, ok := h.entries["keep"]; !ok {
		t.Errorf("the most recently seen object was evicted")
	}
}

func TestHotLoopDetectorIsSafeForConcurrentUse(t *testing.T) {
	h := &HotLoopDetector{Threshold: 4, HoldOff: time.Hour, Clock: clocktesting.NewFakePassiveClock(time.Unix(0, 0))}
	const n = 64
	var mu sync.Mutex
	var held, tripped int
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, hd, tr := observe(h, "same", 1)
			observe(h, fmt.Sprint("other", i%7), uint64(i))
			mu.Lock()
			defer mu.Unlock()
			if hd {
				held++
			}
			if tr {
				tripped++
			}
		})
	}
	wg.Wait()
	if tripped != 1 || held != n-3 {
		t.Errorf("tripped %d times, held %d of %d; want 1 trip and all but the first 3 held", tripped, held, n)
	}
}

// TestHotLoopDetectorZeroValueUsesDefaults proves the defaults the fields
// document: the 5th same drift trips the detector, for 5 minutes.
func TestHotLoopDetectorZeroValueUsesDefaults(t *testing.T) {
	h := HotLoopDetector{Clock: clocktesting.NewFakePassiveClock(time.Unix(0, 0))}
	for i := range 4 {
		if _, _, hold, _ := observe(&h, "k", 1); hold {
			t.Fatalf("drift %d held back before the default threshold", i+1)
		}
	}
	now, until, hold, _ := observe(&h, "k", 1)
	if !hold {
		t.Fatalf("default threshold reached, not held")
	}
	if d := until.Sub(now); d != 5*time.Minute {
		t.Errorf("hold-off %v, want 5m", d)
	}
	if got := (&HotLoopError{Object: "Widget ns/w", Paths: []string{"spec.x"}, Until: time.Unix(0, 0)}).Error(); got !=
		`drift: hot loop on Widget ns/w: spec.x keep drifting back; not patching until 1970-01-01T00:00:00Z` {
		t.Errorf("Error() = %q", got)
	}
}

// TestHotLoopErrorIsThrottledForItsHoldOff proves a held-back write is
// classed throttled with the hold-off left as its delay and ReasonHotLoop as
// its reason, also wrapped, so requeue.Policy waits the hold-off out instead
// of retrying with backoff.
func TestHotLoopErrorIsThrottledForItsHoldOff(t *testing.T) {
	herr := &HotLoopError{Object: "Widget ns/w", Paths: []string{"spec.x"}, Until: time.Unix(300, 0), Left: 4 * time.Minute}
	for _, err := range []error{herr, fmt.Errorf("ensure pod: %w", herr)} {
		class, delay := errors.Classify(err)
		if class != errors.ClassThrottled || delay != 4*time.Minute {
			t.Errorf("Classify(%v) = %v, %v; want throttled, 4m", err, class, delay)
		}
		if r := errors.Reason(err); r != ReasonHotLoop {
			t.Errorf("Reason(%v) = %q, want %q", err, r, ReasonHotLoop)
		}
		if !errors.Is(err, ErrHotLoop) {
			t.Errorf("%v does not match ErrHotLoop", err)
		}
	}
}

// TestHotLoopDetectorClockComesFromItselfThenTheWriter: the detector's own
// Clock wins; without one, the Writer's that reports to it; without either,
// the real clock.
func TestHotLoopDetectorClockComesFromItselfThenTheWriter(t *testing.T) {
	own := clocktesting.NewFakePassiveClock(time.Unix(1, 0))
	writers := clocktesting.NewFakePassiveClock(time.Unix(2, 0))
	if got := (&HotLoopDetector{Clock: own}).clockOr(writers).Now(); !got.Equal(own.Now()) {
		t.Errorf("with its own clock: %v, want %v", got, own.Now())
	}
	if got := (&HotLoopDetector{}).clockOr(writers).Now(); !got.Equal(writers.Now()) {
		t.Errorf("with the writer's: %v, want %v", got, writers.Now())
	}
	if _, ok := (&HotLoopDetector{}).clockOr(nil).(clock.RealClock); !ok {
		t.Errorf("without either: not the real clock")
	}
}

func TestHotLoopDetectorValidate(t *testing.T) {
	tests := []struct {
		name string
		h    *HotLoopDetector
		bad  []string // fields the error names
	}{
		{name: "zero value: the defaults", h: &HotLoopDetector{}},
		{name: "all set", h: &HotLoopDetector{Threshold: 2, Window: time.Second, HoldOff: time.Minute, MaxObjects: 1}},
		{name: "a threshold of 1 would never write", h: &HotLoopDetector{Threshold: 1}, bad: []string{"Threshold"}},
		{name: "negative values", h: &HotLoopDetector{Threshold: -1, Window: -time.Second, HoldOff: -time.Second, MaxObjects: -1},
			bad: []string{"Threshold", "Window", "HoldOff", "MaxObjects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.Validate()
			if len(tt.bad) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidHotLoopDetector) {
				t.Fatalf("Validate() = %v, want ErrInvalidHotLoopDetector", err)
			}
			for _, f := range tt.bad {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate() = %q, want it to name %s", err, f)
				}
			}
		})
	}
}

// TestAHotLoopDetectorForgetsObjectsThatStopDrifting: an object whose
// drifts stop (it was deleted, or it converged) is forgotten once its entry
// says nothing any more, its last drift Window ago and its hold-off over,
// so that the detector holds the objects that drift now, not every object
// that ever drifted. One held back is remembered until its hold-off ends.
func TestAHotLoopDetectorForgetsObjectsThatStopDrifting(t *testing.T) {
	gauge := func() float64 { return metricstest.Settled(t, "reconcilekit_hot_loop_entries", nil) }
	before := gauge()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	h := &HotLoopDetector{Threshold: 2, Window: time.Minute, HoldOff: 10 * time.Minute, Clock: clk}
	for i := range 100 {
		observe(h, fmt.Sprint("obj-", i), 1)
	}
	observe(h, "held", 1)
	if _, _, hold, tripped := observe(h, "held", 1); !hold || !tripped {
		t.Fatal("the second same drift within the window did not trip the detector")
	}
	if n := h.Len(); n != 101 {
		t.Fatalf("Len = %d after 101 objects drifted, want 101", n)
	}
	if g := gauge() - before; g != 101 {
		t.Errorf("the gauge counts %v objects, want 101", g)
	}
	clk.SetTime(clk.Now().Add(time.Minute + time.Second))
	if n := h.Len(); n != 1 {
		t.Errorf("Len = %d once the window passed, want 1 (the object held back)", n)
	}
	if _, _, hold, _ := observe(h, "held", 2); !hold {
		t.Error("the object held back was forgotten during its hold-off")
	}
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	if n := h.Len(); n != 0 {
		t.Errorf("Len = %d once the hold-off ended and the window passed, want 0", n)
	}
	if g := gauge() - before; g != 0 {
		t.Errorf("the gauge counts %v objects once all are forgotten, want 0", g)
	}
	// A drift after that counts from one, as for a new object.
	if _, _, hold, _ := observe(h, "held", 1); hold {
		t.Error("a drift after the detector forgot the object was held back")
	}
}
