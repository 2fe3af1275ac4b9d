package diet

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzTopKeys holds the scanner that reads an entry's top-level fields
// without decoding it to encoding/json: on a JSON object it finds the same
// keys, and on anything else it says it cannot read it or still finds a
// subset of what encoding/json would (never panics).
func FuzzTopKeys(f *testing.F) {
	for _, s := range []string{``, `{}`, ` { } `, `{"f:spec":{}}`, `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"k:{\"name\":\"x\"}":{}}}`,
		`{"a":[1,2,{"b":"c\"d"}],"e":null,"f":true,"g":-1.5e3}`, `{"a":`, `[1]`, `{"a":1,}`, `{"\u0041":{}}`, `{"a":{}} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		keys, ok := topKeys(raw)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			if ok && len(bytes.TrimSpace(raw)) > 0 && len(keys) > 0 {
				// The scanner is laxer than encoding/json on invalid
				// input (it does not check escapes or numbers): what it
				// reads must still be keys of the object it saw.
				for _, k := range keys {
					if len(k) < 2 || k[0] != '"' || k[len(k)-1] != '"' {
						t.Fatalf("topKeys(%q) read key %q", raw, k)
					}
				}
			}
			return
		}
		if !ok {
			t.Fatalf("topKeys(%q) could not read a JSON object", raw)
		}
		var got []string
		for _, k := range keys {
			var s string
			if err := json.Unmarshal(k, &s); err != nil {
				t.Fatalf("topKeys(%q) read key %q: %v", raw, k, err)
			}
			got = append(got, s)
		}
		var want []string
		for k := range m {
			want = append(want, k)
		}
		slices.Sort(got)
		got = slices.Compact(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("topKeys(%q) = %q, encoding/json says %q", raw, got, want)
		}
	})
}

// paths are the fields the fuzzed entries are made of: the operator's and
// others' overlap in every way that matters (same field, beneath, above,
// beside, another top-level field).
var fuzzPaths = []string{
	`"f:metadata":{"f:labels":{"f:a":{}}}`,
	`"f:metadata":{"f:labels":{"f:b":{}}}`,
	`"f:metadata":{"f:annotations":{"f:n":{}}}`,
	`"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}`,
	`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{}}}}`,
	`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"X\"}":{".":{}}}}}}`,
	`"f:spec":{"f:containers":{"k:{\"name\":\"side\"}":{".":{}}}}`,
	`"f:spec":{"f:replicas":{}}`,
	`"f:status":{"f:phase":{}}`,
}

// fields builds an entry's fields from the paths picked by the bits of
// mask, merged into one JSON object as the API server writes them.
func fields(mask uint16) []byte {
	merged := map[string]any{}
	for i, p := range fuzzPaths {
		if mask&(1<<i) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte("{"+p+"}"), &m); err != nil {
			panic(err)
		}
		merge(merged, m)
	}
	if len(merged) == 0 {
		return nil
	}
	b, err := json.Marshal(merged)
	if err != nil {
		panic(err)
	}
	return b
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if d, ok := dst[k].(map[string]any); ok {
			if s, ok := v.(map[string]any); ok {
				merge(d, s)
				continue
			}
		}
		dst[k] = v
	}
}

// FuzzManagedFieldsKeepsEveryOverlappingEntry: the cheap test by top-level
// field never drops an entry that the full parse finds on or beneath a
// field of the operator's, and keeps nothing the full parse would drop
// unless it shares a top-level field with the operator's (the test is
// conservative, never wrong).
func FuzzManagedFieldsKeepsEveryOverlappingEntry(f *testing.F) {
	f.Add(uint16(1), uint16(2), uint16(256), false)
	f.Add(uint16(16), uint16(32), uint16(0), false)
	f.Add(uint16(1), uint16(1), uint16(64), true)
	f.Fuzz(func(t *testing.T, ourMask, theirMask, otherMask uint16, status bool) {
		d := newManagedFields("us")
		ours := metav1.ManagedFieldsEntry{Manager: "us", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: fields(ourMask)}}
		theirs := metav1.ManagedFieldsEntry{Manager: "them", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: fields(theirMask)}}
		if status {
			theirs.Subresource = "status"
		}
		other := metav1.ManagedFieldsEntry{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: fields(otherMask)}}
		entries := []metav1.ManagedFieldsEntry{ours, theirs, other}
		kept, _ := d.keep(entries)
		keptBy := map[string]bool{}
		for _, e := range kept {
			keptBy[e.Manager] = true
		}
		if !keptBy["us"] {
			t.Fatalf("the operator's entry was dropped: %v", kept)
		}
		oursSet, err := parse(&ours)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries[1:] {
			must := overlaps(oursSet, &e)
			if must && !keptBy[e.Manager] {
				t.Fatalf("dropped %s's entry %s, which owns a field at or beneath one of ours %s", e.Manager, e.FieldsV1.Raw, ours.FieldsV1.Raw)
			}
			if !must && keptBy[e.Manager] {
				keys, _ := topKeys(e.FieldsV1.Raw)
				ourKeys, _ := topKeys(ours.FieldsV1.Raw)
				if !sharesKey(keys, ourKeys) {
					t.Fatalf("kept %s's entry %s, which shares no field with ours %s", e.Manager, e.FieldsV1.Raw, ours.FieldsV1.Raw)
				}
				t.Fatalf("kept %s's entry %s after parsing both: it owns nothing at or beneath ours %s", e.Manager, e.FieldsV1.Raw, ours.FieldsV1.Raw)
			}
		}
	})
}
