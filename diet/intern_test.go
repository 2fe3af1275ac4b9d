package diet_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// internedJSON is an object as the API server sends it, with a value of
// each kind of field Intern shares (and of some it leaves).
func internedJSON(name string) string {
	return fmt.Sprintf(`{
  "apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget",
  "metadata": {
    "name": %q, "namespace": "team-a", "uid": "uid-%s", "resourceVersion": "7",
    "labels": {"app.kubernetes.io/name": "widget", "pod-template-hash": "h-%s"},
    "annotations": {"example.com/note": "note of %s"},
    "finalizers": ["example.com/cleanup"],
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-%s", "uid": "rs-uid-%s"}],
    "managedFields": [{"manager": "app-controller", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {}}]
  },
  "status": {"conditions": [
    {"type": "Ready", "status": "True", "reason": "Available", "message": "%s is ready", "lastTransitionTime": "2026-11-26T09:00:00Z"}
  ]}
}`, name, name, name, name, name, name, name)
}

// shared reports whether a and b are the same copy of a string.
func shared(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }

// TestInternSharesWhatObjectsHoldAlike: after Intern, two objects decoded
// apart hold one copy of each string Intern names, and their own copy of
// the others; each reads as it did before.
func TestInternSharesWhatObjectsHoldAlike(t *testing.T) {
	type pick func(obj any) string
	typed := func(f func(w *testapi.Widget) string) pick {
		return func(obj any) string { return f(obj.(*testapi.Widget)) }
	}
	field := func(path ...any) pick {
		return func(obj any) string {
			var v any = obj.(*unstructured.Unstructured).Object
			for _, p := range path {
				switch k := p.(type) {
				case string:
					v = v.(map[string]any)[k]
				case int:
					v = v.([]any)[k]
				}
			}
			return v.(string)
		}
	}
	key := func(m map[string]string, prefix string) string {
		for k := range m {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				return k
			}
		}
		return ""
	}
	ukey := func(obj any, of, prefix string) string {
		m, _, _ := unstructured.NestedStringMap(obj.(*unstructured.Unstructured).Object, "metadata", of)
		// NestedStringMap copies the map but not its strings.
		return key(m, prefix)
	}
	decodeTyped := func(t *testing.T, name string) any {
		w := &testapi.Widget{}
		if err := json.Unmarshal([]byte(internedJSON(name)), w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	decodeUnstructured := func(t *testing.T, name string) any {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(internedJSON(name)), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	tests := []struct {
		name   string
		decode func(t *testing.T, name string) any
		shared map[string]pick
		own    map[string]pick
	}{{
		name:   "typed",
		decode: decodeTyped,
		shared: map[string]pick{
			"namespace":                 typed(func(w *testapi.Widget) string { return w.Namespace }),
			"label key":                 typed(func(w *testapi.Widget) string { return key(w.Labels, "app.kubernetes.io/") }),
			"label value":               typed(func(w *testapi.Widget) string { return w.Labels["app.kubernetes.io/name"] }),
			"annotation key":            typed(func(w *testapi.Widget) string { return key(w.Annotations, "example.com/") }),
			"finalizer":                 typed(func(w *testapi.Widget) string { return w.Finalizers[0] }),
			"owner apiVersion":          typed(func(w *testapi.Widget) string { return w.OwnerReferences[0].APIVersion }),
			"owner kind":                typed(func(w *testapi.Widget) string { return w.OwnerReferences[0].Kind }),
			"managedFields manager":     typed(func(w *testapi.Widget) string { return w.ManagedFields[0].Manager }),
			"managedFields operation":   typed(func(w *testapi.Widget) string { return string(w.ManagedFields[0].Operation) }),
			"managedFields subresource": typed(func(w *testapi.Widget) string { return w.ManagedFields[0].Subresource }),
			"condition type":            typed(func(w *testapi.Widget) string { return w.Status.Conditions[0].Type }),
			"condition status":          typed(func(w *testapi.Widget) string { return string(w.Status.Conditions[0].Status) }),
			"condition reason":          typed(func(w *testapi.Widget) string { return w.Status.Conditions[0].Reason }),
		},
		own: map[string]pick{
			"label value that differs": typed(func(w *testapi.Widget) string { return w.Labels["pod-template-hash"] }),
			"annotation value":         typed(func(w *testapi.Widget) string { return w.Annotations["example.com/note"] }),
			"condition message":        typed(func(w *testapi.Widget) string { return w.Status.Conditions[0].Message }),
			"owner name":               typed(func(w *testapi.Widget) string { return w.OwnerReferences[0].Name }),
		},
	}, {
		name:   "unstructured",
		decode: decodeUnstructured,
		shared: map[string]pick{
			"namespace":               field("metadata", "namespace"),
			"label key":               func(obj any) string { return ukey(obj, "labels", "app.kubernetes.io/") },
			"label value":             field("metadata", "labels", "app.kubernetes.io/name"),
			"annotation key":          func(obj any) string { return ukey(obj, "annotations", "example.com/") },
			"finalizer":               field("metadata", "finalizers", 0),
			"owner apiVersion":        field("metadata", "ownerReferences", 0, "apiVersion"),
			"owner kind":              field("metadata", "ownerReferences", 0, "kind"),
			"managedFields manager":   field("metadata", "managedFields", 0, "manager"),
			"managedFields operation": field("metadata", "managedFields", 0, "operation"),
			"condition type":          field("status", "conditions", 0, "type"),
			"condition status":        field("status", "conditions", 0, "status"),
			"condition reason":        field("status", "conditions", 0, "reason"),
		},
		own: map[string]pick{
			"label value that differs": field("metadata", "labels", "pod-template-hash"),
			"condition message":        field("status", "conditions", 0, "message"),
			"owner name":               field("metadata", "ownerReferences", 0, "name"),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.decode(t, "a"), tt.decode(t, "b")
			for what, p := range tt.shared {
				if shared(p(a), p(b)) {
					t.Fatalf("%s: decoded apart, the two objects already share it", what)
				}
			}
			wantA, wantB := a.(runtime.Object).DeepCopyObject(), b.(runtime.Object).DeepCopyObject()
			intern := diet.Intern()
			for _, obj := range []any{a, b} {
				if out, err := intern(obj); err != nil || out != obj {
					t.Fatalf("Intern returned %v, %v; want the object it was given", out, err)
				}
			}
			for what, p := range tt.shared {
				if !shared(p(a), p(b)) {
					t.Errorf("%s: two copies of %q after Intern, want one", what, p(a))
				}
			}
			for what, p := range tt.own {
				if p(a) == p(b) || unsafe.StringData(p(a)) == unsafe.StringData(p(b)) {
					t.Errorf("%s: %q and %q share storage", what, p(a), p(b))
				}
			}
			if d := cmp.Diff(wantA, a); d != "" {
				t.Errorf("Intern changed what the object reads (-before +after):\n%s", d)
			}
			if d := cmp.Diff(wantB, b); d != "" {
				t.Errorf("Intern changed what the object reads (-before +after):\n%s", d)
			}
		})
	}
}

// TestInternLeavesWhatItDoesNotKnow: an object that is not a Kubernetes
// object, and one without conditions, come back as they were.
func TestInternLeavesWhatItDoesNotKnow(t *testing.T) {
	intern := diet.Intern()
	for _, in := range []any{"a string", 42, nil, toolsTombstone{}} {
		out, err := intern(in)
		if err != nil || out != in {
			t.Errorf("Intern(%#v) = %#v, %v; want it back unchanged", in, out, err)
		}
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "team-a", "settings"
	cm.Data = map[string]string{"k": "v"}
	want := cm.DeepCopy()
	if _, err := intern(cm); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, cm); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	var nilPod *corev1.Pod
	if out, err := intern(nilPod); err != nil || out != any(nilPod) {
		t.Errorf("Intern(nil *Pod) = %v, %v", out, err)
	}
}

type toolsTombstone struct{ Key string }

// TestInternSharesThePodConditionsOfTypedChildren: a typed condition of its
// own struct type (a Pod's) is interned as metav1.Condition is.
func TestInternSharesThePodConditionsOfTypedChildren(t *testing.T) {
	decode := func() *corev1.Pod {
		p := &corev1.Pod{}
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"p","namespace":"ns"},"status":{"conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}]}}`), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := decode(), decode()
	intern := diet.Intern()
	_, _ = intern(a)
	_, _ = intern(b)
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	if !shared(string(ca.Type), string(cb.Type)) || !shared(string(ca.Status), string(cb.Status)) || !shared(ca.Reason, cb.Reason) {
		t.Errorf("the Pods' condition type, status and reason are not shared")
	}
}

// TestInternIsSafeForTheInformersOfOneCache: one Intern transform used by
// several informers at once (go test -race).
func TestInternIsSafeForTheInformersOfOneCache(t *testing.T) {
	intern := diet.Intern()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				w := &testapi.Widget{}
				if err := json.Unmarshal([]byte(internedJSON(fmt.Sprintf("w-%d-%d", g, i))), w); err != nil {
					t.Error(err)
					return
				}
				if _, err := intern(w); err != nil {
					t.Error(err)
					return
				}
				if w.Namespace != "team-a" || w.Labels["pod-template-hash"] != fmt.Sprintf("h-w-%d-%d", g, i) {
					t.Errorf("object read back wrong: %v %v", w.Namespace, w.Labels)
					return
				}
			}
		})
	}
	wg.Wait()
}
