package bare_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/bench/bare"
)

// TestMergeDiff: the patch carries changed and new fields, null for removed
// ones, objects by field and lists whole; nothing when nothing changed.
func TestMergeDiff(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]any
		want          map[string]any
	}{
		{"nothing changed", map[string]any{"a": 1.0, "o": map[string]any{"x": "y"}}, map[string]any{"a": 1.0, "o": map[string]any{"x": "y"}}, map[string]any{}},
		{"a new field", map[string]any{}, map[string]any{"a": "b"}, map[string]any{"a": "b"}},
		{"a removed field", map[string]any{"a": "b"}, map[string]any{}, map[string]any{"a": nil}},
		{"a nested change", map[string]any{"o": map[string]any{"x": 1.0, "y": 2.0}}, map[string]any{"o": map[string]any{"x": 1.0, "y": 3.0}},
			map[string]any{"o": map[string]any{"y": 3.0}}},
		{"a list, whole", map[string]any{"l": []any{1.0, 2.0}}, map[string]any{"l": []any{1.0, 3.0}}, map[string]any{"l": []any{1.0, 3.0}}},
		{"an object becoming a scalar", map[string]any{"o": map[string]any{"x": 1.0}}, map[string]any{"o": "s"}, map[string]any{"o": "s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, bare.MergeDiff(tc.before, tc.after)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
