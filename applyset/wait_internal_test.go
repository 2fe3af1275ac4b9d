package applyset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestWaitIndex proves what the index of waiting parents keeps: parents by
// group, each woken by every event until an Apply reports on it, forgotten
// when it waits for nothing, when a second event finds it not heard of
// since the first, or beyond the bound.
func TestWaitIndex(t *testing.T) {
	var w waitIndex
	a, b, c := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}, types.NamespacedName{Namespace: "ns", Name: "c"}
	w.set(a, []string{"monitoring.coreos.com", "example.com", "example.com"}, 10)
	w.set(b, []string{"example.com"}, 10)
	if diff := cmp.Diff([]types.NamespacedName{a, b}, w.wake("example.com")); diff != "" {
		t.Errorf("wake (-want +got):\n%s", diff)
	}
	// a's reconcile ran and still waits; b's did not report (it is gone,
	// or still running).
	w.set(a, []string{"example.com"}, 10)
	if diff := cmp.Diff([]types.NamespacedName{a, b}, w.wake("example.com")); diff != "" {
		t.Errorf("second wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.NamespacedName{a}, w.wake("example.com")); diff != "" {
		t.Errorf("third wake: b should be forgotten (-want +got):\n%s", diff)
	}
	if got := w.wake("monitoring.coreos.com"); len(got) != 0 {
		t.Errorf("a waits no longer for monitoring.coreos.com, and was woken: %v", got)
	}
	w.set(a, nil, 10)
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
