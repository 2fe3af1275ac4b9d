package status

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// Object types whose status field is declared in the ways encoding/json
// treats differently.
type (
	innerStatus struct {
		Phase string `json:"phase"`
		Count *int   `json:"count,omitempty"`
	}
	pointerStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            *innerStatus `json:"status,omitempty"`
	}
	omitzeroStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            innerStatus `json:"status,omitzero"`
	}
	mapStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            map[string]string `json:"status,omitempty"`
	}
	renamedStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            innerStatus `json:"state"`
		Observed          innerStatus `json:"status"`
	}
	selfEncoding struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            innerStatus `json:"status"`
	}
	// ptrMarshaled encodes itself, with a pointer receiver.
	ptrMarshaled       struct{ Phase string }
	ptrMarshaledStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            ptrMarshaled `json:"status"`
	}
	// ptrZeroer says it is zero, with a pointer receiver, when its phase
	// is "none".
	ptrZeroer struct {
		Phase string `json:"phase"`
	}
	ptrZeroerStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            ptrZeroer `json:"status,omitzero"`
	}
	stringStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Status            string `json:"status"`
	}
	embeddedStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		innerStatus       `json:"status"`
	}
	noStatus struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
)

func (o *pointerStatus) DeepCopyObject() runtime.Object      { c := *o; return &c }
func (o *omitzeroStatus) DeepCopyObject() runtime.Object     { c := *o; return &c }
func (o *mapStatus) DeepCopyObject() runtime.Object          { c := *o; return &c }
func (o *renamedStatus) DeepCopyObject() runtime.Object      { c := *o; return &c }
func (o *selfEncoding) DeepCopyObject() runtime.Object       { c := *o; return &c }
func (o *noStatus) DeepCopyObject() runtime.Object           { c := *o; return &c }
func (o *ptrMarshaledStatus) DeepCopyObject() runtime.Object { c := *o; return &c }
func (o *ptrZeroerStatus) DeepCopyObject() runtime.Object    { c := *o; return &c }
func (o *stringStatus) DeepCopyObject() runtime.Object       { c := *o; return &c }
func (o *embeddedStatus) DeepCopyObject() runtime.Object     { c := *o; return &c }

func (p *ptrMarshaled) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"PHASE": p.Phase})
}

func (z *ptrZeroer) IsZero() bool { return z.Phase == "none" }

// MarshalJSON writes the status under "status" in upper case, which only
// encoding the whole object shows.
func (o *selfEncoding) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"phase": "SELF-" + o.Status.Phase}})
}

// TestStatusOfEncodesOnlyTheStatusAsTheWholeObjectWould proves the shortcut
// the writer takes (encode the status field alone, not the object with its
// managedFields) gives the same JSON status as encoding the whole object,
// for every way a type can declare its status.
func TestStatusOfEncodesOnlyTheStatusAsTheWholeObjectWould(t *testing.T) {
	two := 2
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "o", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}}
	widget := &testapi.Widget{ObjectMeta: meta}
	widget.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R",
		LastTransitionTime: metav1.Unix(1_700_000_000, 0)}}
	widget.Status.ObservedGeneration = 3
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "x/v1", "kind": "U", "metadata": map[string]any{"name": "o"},
		"status": map[string]any{"phase": "RUNNING", "count": int64(2), "ratio": 0.5},
	}}
	for _, tc := range []struct {
		name      string
		obj       client.Object
		shortcut  bool
		wantEmpty bool
	}{
		{"typed, conditions and a number", widget, true, false},
		{"typed, zero status", &testapi.Widget{ObjectMeta: meta}, true, true},
		{"unstructured", u, true, false},
		{"unstructured without status", &unstructured.Unstructured{Object: map[string]any{"kind": "U"}}, true, true},
		{"nil pointer status", &pointerStatus{ObjectMeta: meta}, true, true},
		{"pointer status", &pointerStatus{ObjectMeta: meta, Status: &innerStatus{Phase: "P", Count: &two}}, true, false},
		{"omitzero, zero", &omitzeroStatus{ObjectMeta: meta}, true, true},
		{"omitzero, set", &omitzeroStatus{ObjectMeta: meta, Status: innerStatus{Phase: "P"}}, true, false},
		{"omitempty map, empty", &mapStatus{ObjectMeta: meta}, true, true},
		{"omitempty map, set", &mapStatus{ObjectMeta: meta, Status: map[string]string{"a": "b"}}, true, false},
		{"status under another Go name", &renamedStatus{ObjectMeta: meta, Status: innerStatus{Phase: "no"},
			Observed: innerStatus{Phase: "yes"}}, true, false},
		{"type encodes itself", &selfEncoding{ObjectMeta: meta, Status: innerStatus{Phase: "P"}}, false, false},
		{"no status field", &noStatus{ObjectMeta: meta}, false, true},
		{"status encodes itself with a pointer receiver", &ptrMarshaledStatus{ObjectMeta: meta, Status: ptrMarshaled{Phase: "P"}}, true, false},
		{"omitzero with a pointer-receiver IsZero, zero", &ptrZeroerStatus{ObjectMeta: meta, Status: ptrZeroer{Phase: "none"}}, true, true},
		{"omitzero with a pointer-receiver IsZero, set", &ptrZeroerStatus{ObjectMeta: meta, Status: ptrZeroer{Phase: "P"}}, true, false},
		{"status is a string", &stringStatus{ObjectMeta: meta, Status: "fine"}, true, true},
		{"unstructured status is a string", &unstructured.Unstructured{Object: map[string]any{"kind": "U", "status": "fine"}}, true, true},
		{"embedded field tagged status", &embeddedStatus{ObjectMeta: meta, innerStatus: innerStatus{Phase: "P"}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := toJSONMap(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := whole["status"].(map[string]any)
			got, err := statusOf(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("statusOf differs from the whole object's status (-whole +statusOf):\n%s", diff)
			}
			if (len(got) == 0) != tc.wantEmpty {
				t.Errorf("statusOf = %v, want empty: %v", got, tc.wantEmpty)
			}
			if _, ok := statusValue(tc.obj); ok != tc.shortcut {
				t.Errorf("statusValue took the shortcut: %v, want %v", ok, tc.shortcut)
			}
		})
	}
}

// TestStatusFieldIsTheOneEncodingJSONWrites covers the field lookup on
// struct types the compiler's vet would not let a test declare (two fields
// tagged "status"), built with reflect.StructOf, and each naming rule.
func TestStatusFieldIsTheOneEncodingJSONWrites(t *testing.T) {
	str := reflect.TypeFor[string]()
	field := func(name, tag string) reflect.StructField {
		return reflect.StructField{Name: name, Type: str, Tag: reflect.StructTag(tag)}
	}
	for _, tc := range []struct {
		name    string
		fields  []reflect.StructField
		index   int
		opts    string
		encoded bool // whether encoding/json writes a "status" key
	}{
		{"tagged", []reflect.StructField{field("Spec", `json:"spec"`), field("Observed", `json:"status,omitempty"`)}, 1, "omitempty", true},
		{"untagged, written as \"Status\"", []reflect.StructField{field("Status", "")}, -1, "", false},
		{"tagged without a name", []reflect.StructField{field("Status", `json:",omitempty"`)}, -1, "", false},
		{"Go name Status tagged otherwise", []reflect.StructField{field("Status", `json:"state"`)}, -1, "", false},
		{"skipped with a dash", []reflect.StructField{field("Status", `json:"-"`)}, -1, "", false},
		{"two tagged status", []reflect.StructField{field("A", `json:"status"`), field("B", `json:"status"`)}, -1, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := reflect.StructOf(tc.fields)
			i, opts, ok := statusField(typ)
			if ok != (tc.index >= 0) || (ok && (i != tc.index || opts != tc.opts)) {
				t.Errorf("statusField = %d, %q, %v; want %d, %q", i, opts, ok, tc.index, tc.opts)
			}
			v := reflect.New(typ).Elem()
			for j := range v.NumField() {
				v.Field(j).SetString("x")
			}
			b, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if _, has := m["status"]; has != tc.encoded || ok != tc.encoded {
				t.Errorf("encoding/json wrote status: %v (%s); statusField found it: %v", has, b, ok)
			}
		})
	}
}

// BenchmarkStatusOf measures encoding an object's status for the writer's
// comparison: the status alone against the whole object (metadata with
// managedFields included), as the writer did before.
func BenchmarkStatusOf(b *testing.B) {
	obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ResourceVersion: "7"}}
	for range 4 {
		obj.ManagedFields = append(obj.ManagedFields, metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}},"f:spec":{"f:replicas":{},"f:ports":{}}}`)}})
	}
	obj.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", Message: "m",
		LastTransitionTime: metav1.Unix(1_700_000_000, 0)}}
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			if _, err := statusOf(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole-object", func(b *testing.B) {
		for b.Loop() {
			if _, err := toJSONMap(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
