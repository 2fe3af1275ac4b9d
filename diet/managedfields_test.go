package diet_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/diet"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
)

const owner = "app-controller"

// entry is a managedFields entry of the main resource.
func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

func status(manager, fields string) metav1.ManagedFieldsEntry {
	e := entry(manager, metav1.ManagedFieldsOperationUpdate, fields)
	e.Subresource = "status"
	return e
}

const (
	update = metav1.ManagedFieldsOperationUpdate
	apply  = metav1.ManagedFieldsOperationApply

	// What the operator wrote: a label, a container with an env var.
	ours = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:env":{".":{},"k:{\"name\":\"LOG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}`
	// Its status writes.
	ourStatus = `{"f:status":{"f:phase":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:type":{},"f:status":{}}}}}`
	// The creator's fields: none the operator owns.
	creator = `{"f:spec":{"f:schedule":{},"f:command":{}}}`
	// kubectl's annotation: metadata too, but not under anything ours.
	annotation = `{"f:metadata":{"f:annotations":{".":{},"f:note":{}}}}`
	// Another controller's env var in the operator's container: beneath a
	// list element the operator owns.
	sidecarEnv = `{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"FOREIGN\"}":{".":{},"f:name":{},"f:value":{}}}}}}}`
	// The same label, set by another manager too.
	sameLabel = `{"f:metadata":{"f:labels":{"f:app":{}}}}`
	// A kubelet's status.
	kubelet = `{"f:status":{"f:phase":{},"f:containerStatuses":{}}}`
)

func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		name := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			name += "/" + e.Subresource
		}
		out = append(out, name)
	}
	return out
}

// TestManagedFieldsKeepsWhatTheLibraryReads: the operator's entries of the
// object itself, another manager's entry on or beneath a field of theirs,
// every entry while one of a replaced manager is there; nothing else.
func TestManagedFieldsKeepsWhatTheLibraryReads(t *testing.T) {
	tests := []struct {
		name     string
		replaces []string
		in       []metav1.ManagedFieldsEntry
		want     []string // managers kept, in order
		noFields bool     // the one entry kept says who wrote the object, not what
	}{
		{
			name: "the operator's status entry, the creator's and a kubelet's go",
			in: []metav1.ManagedFieldsEntry{entry("kubectl-create", update, creator), entry(owner, update, ours),
				status(owner, ourStatus), status("kubelet", kubelet)},
			want: []string{owner + "/Update"},
		},
		{
			name: "an entry on fields the operator never wrote goes, though both are in metadata",
			in:   []metav1.ManagedFieldsEntry{entry(owner, update, ours), entry("kubectl-annotate", update, annotation)},
			want: []string{owner + "/Update"},
		},
		{
			name: "another controller's env var in the operator's container stays",
			in:   []metav1.ManagedFieldsEntry{entry(owner, update, ours), entry("injector", update, sidecarEnv), status("kubelet", kubelet)},
			want: []string{owner + "/Update", "injector/Update"},
		},
		{
			name: "a label another manager set too stays",
			in:   []metav1.ManagedFieldsEntry{entry("kubectl-label", update, sameLabel), entry(owner, update, ours)},
			want: []string{"kubectl-label/Update", owner + "/Update"},
		},
		{
			name: "the operator's Apply and Update entries, of every version, stay",
			in: []metav1.ManagedFieldsEntry{entry(owner, apply, ours), entry(owner, update, `{"f:metadata":{"f:finalizers":{".":{},"v:\"x\"":{}}}}`),
				func() metav1.ManagedFieldsEntry { e := entry(owner, update, ours); e.APIVersion = "v1beta1"; return e }()},
			want: []string{owner + "/Apply", owner + "/Update", owner + "/Update"},
		},
		{
			name:     "without an entry of the operator, one of another manager stays, without its fields: somebody else wrote it",
			in:       []metav1.ManagedFieldsEntry{entry("kubectl-create", update, creator), status("kubelet", kubelet)},
			want:     []string{"kubectl-create/Update"},
			noFields: true,
		},
		{
			name:     "that entry is of the object itself rather than a subresource",
			in:       []metav1.ManagedFieldsEntry{status("kubelet", kubelet), entry("kubectl-create", update, creator)},
			want:     []string{"kubectl-create/Update"},
			noFields: true,
		},
		{
			name:     "the operator's status entry alone is not an entry of the object: another manager's stays, without its fields",
			in:       []metav1.ManagedFieldsEntry{entry("kubectl-create", update, creator), status(owner, ourStatus)},
			want:     []string{"kubectl-create/Update"},
			noFields: true,
		},
		{
			name:     "an entry of a replaced manager keeps the whole list, for the takeover",
			replaces: []string{"manager"},
			in:       []metav1.ManagedFieldsEntry{entry("kubectl-create", update, creator), entry("manager", update, ours), status("kubelet", kubelet)},
			want:     []string{"kubectl-create/Update", "manager/Update", "kubelet/Update/status"},
		},
		{
			name:     "a replaced manager's status entry is not taken over: the diet goes on",
			replaces: []string{"manager"},
			in:       []metav1.ManagedFieldsEntry{entry(owner, update, ours), status("manager", kubelet)},
			want:     []string{owner + "/Update"},
		},
		{
			name: "an entry of the operator that does not parse keeps everything",
			in:   []metav1.ManagedFieldsEntry{entry(owner, update, `{"f:spec":`), status("kubelet", kubelet)},
			want: []string{owner + "/Update", "kubelet/Update/status"},
		},
		{
			name: "another entry that does not parse, on a top-level field of the operator's, stays",
			in:   []metav1.ManagedFieldsEntry{entry(owner, update, ours), entry("broken", update, `{"f:spec":{"f:containers":{"k:{not json}":{}}}}`)},
			want: []string{owner + "/Update", "broken/Update"},
		},
		{
			name: "the part's entry of a Fields transform stays",
			in:   []metav1.ManagedFieldsEntry{{Manager: diet.PartialManager, Operation: update, FieldsType: "FieldsV1"}},
			want: []string{diet.PartialManager + "/Update"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			transform, err := diet.ManagedFields(owner, diet.Replaces(tc.replaces...))
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: tc.in}}
			got, err := transform(pod)
			if err != nil {
				t.Fatal(err)
			}
			kept := got.(*corev1.Pod).ManagedFields
			if diff := cmp.Diff(tc.want, managers(kept)); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if tc.noFields && (len(kept) != 1 || kept[0].FieldsV1 != nil) {
				t.Errorf("managedFields %v, want one entry without fields", kept)
			}
			// Idempotent: the informer may pass a kept object again.
			again, err := transform(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(kept, again.(*corev1.Pod).ManagedFields); diff != "" {
				t.Errorf("a second pass changed it (-first +second):\n%s", diff)
			}
		})
	}
}

// TestManagedFieldsOnUnstructuredObjects keeps the same entries of an
// object's unstructured form.
func TestManagedFieldsOnUnstructuredObjects(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{
		entry("kubectl-create", update, creator), entry(owner, update, ours), entry("injector", update, sidecarEnv), status("kubelet", kubelet)}}}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	transform, err := diet.ManagedFields(owner)
	if err != nil {
		t.Fatal(err)
	}
	got, err := transform(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{owner + "/Update", "injector/Update"}, managers(got.(*unstructured.Unstructured).GetManagedFields())); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if got.(*unstructured.Unstructured).GetName() != "p" {
		t.Errorf("the rest of the object changed: %v", got)
	}
}

// TestManagedFieldsPassesWhatItCannotRead: objects without managedFields
// and values that are not objects come out as they went in.
func TestManagedFieldsPassesWhatItCannotRead(t *testing.T) {
	transform, err := diet.ManagedFields(owner)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []any{nil, "a string", &corev1.Pod{}, struct{}{}} {
		got, err := transform(in)
		if err != nil || got != in {
			t.Errorf("transform(%#v) = %#v, %v; want it unchanged", in, got, err)
		}
	}
}

// TestManagedFieldsNeedsTheFieldOwner: an empty field owner is the
// library's one error for it, permanent.
func TestManagedFieldsNeedsTheFieldOwner(t *testing.T) {
	_, err := diet.ManagedFields("")
	if class, _ := rkerrors.Classify(err); !errors.Is(err, rkerrors.ErrNoFieldOwner) || class != rkerrors.ClassPermanent {
		t.Errorf("ManagedFields(\"\") = %v, want errors.ErrNoFieldOwner, permanent", err)
	}
}
