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
