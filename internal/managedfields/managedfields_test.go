package managedfields_test

import (
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

const update, apply = string(metav1.ManagedFieldsOperationUpdate), string(metav1.ManagedFieldsOperationApply)

// TestQuery is the one rule of which entries are ours, with the
// parameters each use of the library gives it: compare (one apiVersion,
// OnlyApplied), drift's takeover (the live object's apiVersion), diet and
// drift's refusal of foreign objects (any version, any operation).
func TestQuery(t *testing.T) {
	compare := managedfields.Query{Owner: "op", Replaces: managedfields.NewManagers("manager"), APIVersion: "apps/v1"}
	applied := compare
	applied.ApplyOnly = true
	diet := managedfields.Query{Owner: "op", Replaces: managedfields.NewManagers("manager"), AnyOperation: true}
	entry := func(manager, op, version, sub string) managedfields.Entry {
		return managedfields.Entry{Manager: manager, Operation: op, APIVersion: version, Subresource: sub}
	}
	tests := []struct {
		name          string
		q             managedfields.Query
		e             managedfields.Entry
		own, replaced bool
	}{
		{"our Update entry", compare, entry("op", update, "apps/v1", ""), true, false},
		{"our Apply entry", compare, entry("op", apply, "apps/v1", ""), true, false},
		{"our entry of another version", compare, entry("op", update, "apps/v1beta2", ""), false, false},
		{"our status entry", compare, entry("op", update, "apps/v1", "status"), false, false},
		{"our entry of an operation the server does not write", compare, entry("op", "", "apps/v1", ""), false, false},
		{"OnlyApplied: our Update entry", applied, entry("op", update, "apps/v1", ""), false, false},
		{"OnlyApplied: our Apply entry", applied, entry("op", apply, "apps/v1", ""), true, false},
		{"OnlyApplied: a replaced Update entry counts by its own operation", applied, entry("manager", update, "apps/v1", ""), false, true},
		{"a replaced Apply entry", compare, entry("manager", apply, "apps/v1", ""), false, true},
		{"a replaced entry of another version", compare, entry("manager", update, "apps/v1beta2", ""), false, false},
		{"a replaced status entry", compare, entry("manager", update, "apps/v1", "status"), false, false},
		{"another manager's entry", compare, entry("kubectl-edit", update, "apps/v1", ""), false, false},
		{"any version", diet, entry("op", update, "apps/v1beta2", ""), true, false},
		{"any operation", diet, entry("op", "", "v1", ""), true, false},
		{"any operation of a replaced manager", diet, entry("manager", "", "v1", ""), false, true},
		{"any version, not a subresource", diet, entry("op", update, "v1", "status"), false, false},
		{"the owner listed among the replaced is the owner", managedfields.Query{Owner: "op", Replaces: managedfields.NewManagers("op")}, entry("op", update, "v1", ""), true, false},
		{"no owner, no replaced manager", managedfields.Query{}, entry("op", update, "v1", ""), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Own(&tt.e); got != tt.own {
				t.Errorf("Own = %v, want %v", got, tt.own)
			}
			if got := tt.q.Replaced(&tt.e); got != tt.replaced {
				t.Errorf("Replaced = %v, want %v", got, tt.replaced)
			}
			if got := tt.q.Ours(&tt.e); got != (tt.own || tt.replaced) {
				t.Errorf("Ours = %v, want %v", got, tt.own || tt.replaced)
			}
		})
	}
}

// TestWroteBefore: an object with an entry of ours was written before; one
// without managedFields cannot tell, and counts as written before.
func TestWroteBefore(t *testing.T) {
	q := managedfields.Query{Owner: "op", Replaces: managedfields.NewManagers("manager"), AnyOperation: true}
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"no managedFields", nil, true},
		{"ours", []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, {Manager: "op"}}, true},
		{"a replaced manager's", []metav1.ManagedFieldsEntry{{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate}}, true},
		{"only our status", []metav1.ManagedFieldsEntry{{Manager: "op", Subresource: "status"}, {Manager: "kubectl"}}, false},
		{"somebody else's", []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}, false},
	}
	for _, tt := range tests {
		if got := q.WroteBefore(tt.entries); got != tt.want {
			t.Errorf("%s: WroteBefore = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestManagers(t *testing.T) {
	m := managedfields.NewManagers("b", "", "a", "b")
	if m != managedfields.NewManagers("a", "b") {
		t.Errorf("NewManagers(b, \"\", a, b) = %q, want the set {a, b}", m)
	}
	for name, want := range map[string]bool{"a": true, "b": true, "": false, "c": false, "a\x00b": false} {
		if got := m.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	if u := m.Union(managedfields.NewManagers("c", "a")); u != managedfields.NewManagers("a", "b", "c") {
		t.Errorf("Union = %q", u)
	}
	if u := managedfields.Managers("").Union(m); u != m {
		t.Errorf("empty Union m = %q", u)
	}
	if managedfields.NewManagers() != "" || managedfields.NewManagers("").Has("") {
		t.Error("the empty set is not empty")
	}
}

// TestDecode: the one decoder reads typed (raw) and unstructured (tree)
// fields alike; what does not parse is an error, never a panic.
func TestDecode(t *testing.T) {
	const fields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`
	want := []fieldpath.Path{
		fieldpath.MakePathOrDie("metadata", "labels", "app"),
		fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP")),
		fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80, "protocol", "TCP"), "port"),
	}
	raw, err := managedfields.Decode(&managedfields.Entry{Raw: []byte(fields)})
	if err != nil {
		t.Fatal(err)
	}
	var content map[string]any
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "op", FieldsV1: metav1.NewFieldsV1(fields)}}}}
	if content, err = toContent(obj); err != nil {
		t.Fatal(err)
	}
	var tree *fieldpath.Set
	managedfields.Each(nil, content, func(e managedfields.Entry) bool {
		if e.Manager != "op" || e.Tree == nil {
			t.Errorf("entry of content: %+v", e)
		}
		tree, err = managedfields.Decode(&e)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*fieldpath.Set{raw, tree} {
		if !s.Equals(fieldpath.NewSet(want...)) {
			t.Errorf("decoded %s, want %s", s, fieldpath.NewSet(want...))
		}
	}
	if !raw.Equals(tree) {
		t.Errorf("raw and tree decode differently: %s\n%s", raw, tree)
	}
	enc, err := managedfields.Encode(raw)
	if err != nil {
		t.Fatal(err)
	}
	back, err := managedfields.Decode(&managedfields.Entry{Raw: enc.Raw})
	if err != nil || !back.Equals(raw) {
		t.Errorf("Encode then Decode: %v, %v", back, err)
	}
	if s, err := managedfields.Decode(&managedfields.Entry{}); err != nil || !s.Empty() {
		t.Errorf("no fields: %v, %v; want an empty set", s, err)
	}
	for _, bad := range []string{`{"f:spec":`, `{"f:spec":{"k:{not json}":{}}}`, `[1]`} {
		if _, err := managedfields.Decode(&managedfields.Entry{Raw: []byte(bad)}); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
	if _, err := managedfields.Decode(&managedfields.Entry{Tree: map[string]any{"f:x": func() {}}}); err == nil {
		t.Error("Decode of a tree JSON cannot hold succeeded")
	}
}

// TestEach: the entries of a typed object and of unstructured content, in
// order, stopping when asked.
func TestEach(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "a", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"},
		{Manager: "b", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Subresource: "status"},
		{Manager: "c"},
	}}}
	content, err := toContent(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := []managedfields.Entry{{Manager: "a", Operation: update, APIVersion: "v1"}, {Manager: "b", Operation: apply, APIVersion: "v1", Subresource: "status"}}
	for _, form := range []struct {
		name    string
		obj     any
		content map[string]any
	}{{"typed", obj, nil}, {"unstructured", nil, content}} {
		var got []managedfields.Entry
		managedfields.Each(form.obj, form.content, func(e managedfields.Entry) bool {
			got = append(got, e)
			return len(got) < 2
		})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: entries (-want +got):\n%s", form.name, diff)
		}
	}
	managedfields.Each("not an object", nil, func(managedfields.Entry) bool { t.Error("an entry of a string"); return true })
}

func TestUnion(t *testing.T) {
	a := fieldpath.NewSet(fieldpath.MakePathOrDie("a"))
	b := fieldpath.NewSet(fieldpath.MakePathOrDie("b"))
	if managedfields.Union(nil, nil) != nil || managedfields.Union(a, nil) != a || managedfields.Union(nil, b) != b {
		t.Error("Union with nil is not the other set")
	}
	if u := managedfields.Union(a, b); !u.Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("a"), fieldpath.MakePathOrDie("b"))) {
		t.Errorf("Union = %s", u)
	}
	if s := managedfields.Select(managedfields.Union(a, b), func(p fieldpath.Path) bool { return p.String() == ".b" }); !s.Equals(b) {
		t.Errorf("Select = %s", s)
	}
}

// toContent returns obj as unstructured content, as the API server's JSON
// decodes into it.
func toContent(obj any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// FuzzDecode: whatever the bytes, Decode returns a set or an error, never
// a panic, and what it decodes of valid UTF-8 (JSON replaces the rest)
// encodes and decodes again to the same set.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"f:spec":{"f:replicas":{}}}`))
	f.Add([]byte(`{"k:{\"x\":1}":{},"v:3":{},"i:0":{}}`))
	f.Add([]byte(`{"f:spec":{"k:{not json}":{}}}`))
	f.Add([]byte(`{"v:[1,{\"a\":null}]":{".":{}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := managedfields.Decode(&managedfields.Entry{Raw: raw})
		if err != nil || !utf8.Valid(raw) {
			return
		}
		enc, err := managedfields.Encode(s)
		if err != nil {
			return
		}
		back, err := managedfields.Decode(&managedfields.Entry{Raw: enc.Raw})
		if err != nil || !back.Equals(s) {
			t.Errorf("%s decoded to %s, encoded to %s, decoded again to %v (%v)", raw, s, enc.Raw, back, err)
		}
	})
}
