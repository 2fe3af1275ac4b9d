package diet

import (
	"fmt"
	"strings"
	"testing"
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
	if in.intern(long); len(in.values) > 0 && in.values[long] != "" {
		t.Errorf("a string of %d bytes was kept; at most %d are", len(long), internMaxLen)
	}
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
