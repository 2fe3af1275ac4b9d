package status

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func TestMergeDiff(t *testing.T) {
	tests := []struct {
		name, before, after, want string
	}{
		{name: "equal documents give an empty patch", before: `{"a":1,"b":{"c":[1,2]}}`, after: `{"a":1,"b":{"c":[1,2]}}`, want: `{}`},
		{name: "changed scalar", before: `{"a":1,"b":2}`, after: `{"a":1,"b":3}`, want: `{"b":3}`},
		{name: "removed key becomes null", before: `{"a":1,"b":2}`, after: `{"a":1}`, want: `{"b":null}`},
		{name: "nested maps are diffed", before: `{"m":{"x":1,"y":2}}`, after: `{"m":{"x":1,"y":5}}`, want: `{"m":{"y":5}}`},
		{name: "lists are replaced whole", before: `{"l":[1,2,3]}`, after: `{"l":[1,3]}`, want: `{"l":[1,3]}`},
		{name: "map replaced by scalar", before: `{"m":{"x":1}}`, after: `{"m":"s"}`, want: `{"m":"s"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := decode(t, tt.before), decode(t, tt.after)
			got := mergeDiff(before, after)
			if diff := cmp.Diff(decode(t, tt.want), got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(after, mergeApply(before, got)); diff != "" {
				t.Errorf("applying the patch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzMergeDiff checks on arbitrary JSON objects without nulls that applying
// the diff of two documents to the first gives the second, and that the diff
// of a document with itself is empty.
func FuzzMergeDiff(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":[1,2]}}`, `{"a":2,"b":{"d":true}}`)
	f.Add(`{}`, `{"x":{"y":{"z":"w"}}}`)
	f.Add(`{"conditions":[{"type":"A"}]}`, `{}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		before, ok1 := fuzzDoc(a)
		after, ok2 := fuzzDoc(b)
		if !ok1 || !ok2 {
			t.Skip()
		}
		if p := mergeDiff(before, before); len(p) != 0 {
			t.Errorf("diff of a document with itself = %v, want empty", p)
		}
		got := mergeApply(before, mergeDiff(before, after))
		if diff := cmp.Diff(after, got); diff != "" {
			t.Errorf("apply(before, diff(before, after)) (-after +got):\n%s", diff)
		}
	})
}

// fuzzDoc decodes s as a JSON object that merge patches can express: no
// nulls (a merge patch cannot set a null).
func fuzzDoc(s string) (map[string]any, bool) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil || hasNull(m) {
		return nil, false
	}
	return m, true
}

func hasNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, x := range v {
			if hasNull(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasNull(x) {
				return true
			}
		}
	}
	return false
}

func TestEditsReapplyOnlyOwnChanges(t *testing.T) {
	tests := []struct {
		name                  string
		snapshot, mine, fresh string
		want                  string
	}{
		{
			name:     "foreign condition added concurrently survives; own condition is added",
			snapshot: `{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"t0"}]}`,
			mine:     `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"t1"}]}`,
			fresh:    `{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"t0"},{"type":"Foreign","status":"True"}]}`,
			want:     `{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"t1"},{"type":"Foreign","status":"True"}]}`,
		},
		{
			name:     "own condition with the status already on the server keeps the server's transition time",
			snapshot: `{"conditions":[]}`,
			mine:     `{"conditions":[{"type":"Ready","status":"True","reason":"Mine","lastTransitionTime":"t1"}]}`,
			fresh:    `{"conditions":[{"type":"Ready","status":"True","reason":"Theirs","lastTransitionTime":"t0"}]}`,
			want:     `{"conditions":[{"type":"Ready","status":"True","reason":"Mine","lastTransitionTime":"t0"}]}`,
		},
		{
			name:     "own removal is re-applied, foreign conditions stay",
			snapshot: `{"conditions":[{"type":"Stalled","status":"True"}]}`,
			mine:     `{}`,
			fresh:    `{"conditions":[{"type":"Foreign","status":"True"},{"type":"Stalled","status":"True"}]}`,
			want:     `{"conditions":[{"type":"Foreign","status":"True"}]}`,
		},
		{
			name:     "removing the last condition drops the field",
			snapshot: `{"phase":"A","conditions":[{"type":"Stalled","status":"True"}]}`,
			mine:     `{"phase":"A"}`,
			fresh:    `{"phase":"A","conditions":[{"type":"Stalled","status":"True"}]}`,
			want:     `{"phase":"A"}`,
		},
		{
			name:     "fields this writer did not change keep the server's values",
			snapshot: `{"phase":"A","observedGeneration":1,"extra":"x"}`,
			mine:     `{"phase":"B","observedGeneration":1,"extra":"x"}`,
			fresh:    `{"phase":"A","observedGeneration":2,"extra":"y"}`,
			want:     `{"phase":"B","observedGeneration":2,"extra":"y"}`,
		},
		{
			name:     "conditions that are not a list of typed objects are handled as a plain field",
			snapshot: `{"conditions":"weird"}`,
			mine:     `{"conditions":"mine"}`,
			fresh:    `{"conditions":"theirs","phase":"P"}`,
			want:     `{"conditions":"mine","phase":"P"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := diffEdits(decode(t, tt.snapshot), decode(t, tt.mine))
			got, err := e.apply(decode(t, tt.fresh))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decode(t, tt.want), got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEditsApplyRejectsMalformedServerConditions(t *testing.T) {
	e := diffEdits(decode(t, `{}`), decode(t, `{"conditions":[{"type":"Ready","status":"True"}]}`))
	if _, err := e.apply(decode(t, `{"conditions":"not a list"}`)); err == nil {
		t.Error("apply on a status whose conditions are not a list: err = nil, want an error")
	}
}
