package live_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

type value struct {
	n   int
	pad [64]byte // not a tiny allocation: its cleanup runs
}

type outer struct {
	other [32]byte
	inner value
}

// TestASetForgetsWhatTheProgramDropped proves a value leaves the set once
// it is unreachable, and that the set never keeps it reachable.
func TestASetForgetsWhatTheProgramDropped(t *testing.T) {
	var s live.Set[value]
	kept := &value{n: 1}
	s.Add(kept)
	s.Add(kept) // once
	func() {
		s.Add(&value{n: 2})
		o := &outer{}
		o.inner.n = 3
		s.Add(&o.inner) // inside a larger value
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the set holds %d values after the program dropped two of three, want 1", s.Len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	var seen []int
	s.Each(func(v *value) { seen = append(seen, v.n) })
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("Each saw %v, want [1]", seen)
	}
	runtime.KeepAlive(kept)
}
