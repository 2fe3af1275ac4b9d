package diet

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestInternHoldsABoundedTable: values that differ on every object (a label
// holding a hash) never grow the interner's table past internMax; a value
// met again after the table started afresh is shared from then on.
func TestInternHoldsABoundedTable(t *testing.T) {
	in := &interner{}
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range 3 * internMax {
		in.intern(fmt.Sprintf("hash-%d", i))
		if len(in.values) > internMax {
			t.Fatalf("after %d distinct values the table holds %d, more than %d", i+1, len(in.values), internMax)
		}
	}
	a := in.intern(string([]byte("team-a")))
	b := in.intern(string([]byte("team-a")))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("a value met twice after the table started afresh is not shared")
	}
	long := strings.Repeat("x", internMaxLen+1)
	n := len(in.values)
	if in.intern(long); len(in.values) != n {
		t.Errorf("a string of %d bytes was kept; at most %d are", len(long), internMaxLen)
	}
}

// TestInternForgetsAValueNoObjectHolds: the table keeps a value while an
// object holds its copy, and forgets it once none does (the name of a
// namespace whose objects are all gone), without waiting for the table to
// fill; a value met again after that gets a new copy, shared from then on.
func TestInternForgetsAValueNoObjectHolds(t *testing.T) {
	in := &interner{}
	held := func() []string {
		in.mu.Lock()
		defer in.mu.Unlock()
		var out []string
		for _, iv := range in.values {
			if v, ok := iv.value(); ok {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return out
	}
	size := func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return len(in.values)
	}
	type object struct{ namespace string }
	intern := func(s string) string {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.intern(s)
	}
	kept := &object{intern(string([]byte("kept")))}
	gone := []*object{{intern(string([]byte("soak-w001")))}, {intern(string([]byte("soak-w001")))}}
	if unsafe.StringData(gone[0].namespace) != unsafe.StringData(gone[1].namespace) {
		t.Fatal("two objects of one namespace do not share its name")
	}
	if got := held(); !slices.Equal(got, []string{"kept", "soak-w001"}) {
		t.Fatalf("the table holds %q, want kept and soak-w001", got)
	}
	gone = nil
	deadline := time.Now().Add(10 * time.Second)
	for size() != 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // cleanups run in a goroutine of their own
	}
	if got, n := held(), size(); !slices.Equal(got, []string{"kept"}) || n != 1 {
		t.Errorf("once no object holds soak-w001 the table holds %q in %d entries, want only kept", got, n)
	}
	a, b := intern(string([]byte("soak-w001"))), intern(string([]byte("soak-w001")))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("a value met again after it was forgotten is not shared")
	}
	runtime.KeepAlive(kept)
}

// TestInternLeavesUIDsAlone: a label value that is a UID (a child
// labelled with its owner's), which differs on every object, takes no room
// in the table; a value that only looks alike does.
func TestInternLeavesUIDsAlone(t *testing.T) {
	in := &interner{}
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range 100 {
		in.intern(fmt.Sprintf("6f1c2d3e-4a5b-4c6d-8e9f-%012x", i))
	}
	if n := len(in.values); n != 0 {
		t.Errorf("the table holds %d values after 100 UIDs, want 0", n)
	}
	for _, s := range []string{"6f1c2d3e-4a5b-4c6d-8e9f-00000000000g", "6f1c2d3e_4a5b-4c6d-8e9f-000000000000", "team-a"} {
		in.intern(s)
	}
	if n := len(in.values); n != 3 {
		t.Errorf("the table holds %d values after 3 that are not UIDs, want 3", n)
	}
}
