package drift

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// Managed fields as kube-apiserver records them for a Deployment: what its
// creator set (defaults included), what kubectl edit added, and what an
// apply set.
const (
	createdFields = `{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1\"}":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"memcached\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":11211,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}}}}}}}}`
	editedFields  = `{"f:metadata":{"f:annotations":{".":{},"f:example.com/note":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"memcached\"}":{"f:env":{".":{},"k:{\"name\":\"EXTRA\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`
	appliedFields = `{"f:metadata":{"f:labels":{"f:tier":{}}},"f:spec":{"f:minReadySeconds":{}}}`
)

func fieldsEntry(manager string, op metav1.ManagedFieldsOperationType, apiVersion, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: apiVersion, FieldsType: "FieldsV1",
		Time: &metav1.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, FieldsV1: metav1.NewFieldsV1(fields)}
}

const update, apply = metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply

// fieldSets maps "manager/operation/subresource" to the entry's fields, to
// compare managedFields by content whatever their order and encoding.
func fieldSets(t testing.TB, entries []metav1.ManagedFieldsEntry) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range entries {
		s, err := decodeEntry(&e)
		if err != nil {
			t.Fatalf("entry %s: %v", e.Manager, err)
		}
		out[e.Manager+"/"+string(e.Operation)+"/"+e.APIVersion+"/"+e.Subresource] = s.String()
	}
	return out
}

func decoded(t testing.TB, fields string) string {
	t.Helper()
	s, err := decodeEntry(&metav1.ManagedFieldsEntry{FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}})
	if err != nil {
		t.Fatal(err)
	}
	return s.String()
}

func unionOf(t testing.TB, fields ...string) string {
	t.Helper()
	u := &fieldpath.Set{}
	for _, f := range fields {
		s, err := decodeEntry(&metav1.ManagedFieldsEntry{FieldsV1: &metav1.FieldsV1{Raw: []byte(f)}})
		if err != nil {
			t.Fatal(err)
		}
		u = u.Union(s)
	}
	return u.String()
}

// TestTakeOver covers the merge itself on managedFields as the API server
// writes them: which entries are taken, into which of ours, and what
// stays.
func TestTakeOver(t *testing.T) {
	status := fieldsEntry("manager", update, "apps/v1", `{"f:status":{"f:replicas":{}}}`)
	status.Subresource = "status"
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		apply   bool
		keep    func(fieldpath.Path) bool
		want    map[string]string // nil: nothing moves
	}{
		{
			name:    "Ensure: the replaced Update entry becomes ours; others and the status entry stay",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("manager", update, "apps/v1", createdFields), status, fieldsEntry("kubectl-edit", update, "apps/v1", editedFields)},
			want: map[string]string{
				"op/Update/apps/v1/":            decoded(t, createdFields),
				"manager/Update/apps/v1/status": decoded(t, `{"f:status":{"f:replicas":{}}}`),
				"kubectl-edit/Update/apps/v1/":  decoded(t, editedFields),
			},
		},
		{
			name:    "Ensure: merged into our Update entry of the same version",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("op", update, "apps/v1", editedFields), fieldsEntry("manager", update, "apps/v1", createdFields)},
			want:    map[string]string{"op/Update/apps/v1/": unionOf(t, createdFields, editedFields)},
		},
		{
			name:    "Ensure: a replaced Apply entry joins our Apply entry",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("reconcilekit", apply, "apps/v1", appliedFields), fieldsEntry("reconcilekit", update, "apps/v1", createdFields)},
			want: map[string]string{
				"op/Apply/apps/v1/":  decoded(t, appliedFields),
				"op/Update/apps/v1/": decoded(t, createdFields),
			},
		},
		{
			name:    "EnsureApplied: Update and Apply entries join our Apply entry, as csaupgrade does",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("op", apply, "apps/v1", appliedFields), fieldsEntry("manager", update, "apps/v1", createdFields)},
			apply:   true,
			want:    map[string]string{"op/Apply/apps/v1/": unionOf(t, appliedFields, createdFields)},
		},
		{
			name:    "another version's entry is not taken",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("manager", update, "apps/v1beta2", createdFields)},
		},
		{
			name:    "our Apply entry of another version takes nothing",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("op", apply, "apps/v1beta2", appliedFields), fieldsEntry("manager", update, "apps/v1", createdFields)},
			apply:   true,
		},
		{
			name:    "a malformed entry stops the takeover",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("manager", update, "apps/v1", `{"f:spec":[`)},
		},
		{
			name:    "part of an entry: what keep selects moves, the rest stays",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("manager", update, "apps/v1", createdFields)},
			keep: func(p fieldpath.Path) bool {
				return p.String() == ".metadata.labels.app" || p.String() == ".spec.replicas"
			},
			want: map[string]string{
				"op/Update/apps/v1/":      decoded(t, `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}}`),
				"manager/Update/apps/v1/": decoded(t, `{"f:metadata":{"f:labels":{".":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1\"}":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"memcached\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":11211,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}}}}}}}}`),
			},
		},
		{
			name:    "part of an entry: nothing selected, nothing moves",
			entries: []metav1.ManagedFieldsEntry{fieldsEntry("manager", update, "apps/v1", createdFields)},
			keep:    func(fieldpath.Path) bool { return false },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newTakeover("op", []string{"manager", "reconcilekit"}, "apps/v1", tt.apply)
			tk.whole = tt.keep == nil
			var before []metav1.ManagedFieldsEntry
			for _, e := range tt.entries {
				before = append(before, *e.DeepCopy())
			}
			got, moved, err := takeOver(tt.entries, tk, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			if moved != (tt.want != nil) {
				t.Fatalf("moved = %v, want %v", moved, tt.want != nil)
			}
			if diff := cmp.Diff(before, tt.entries); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
			if tt.want == nil {
				return
			}
			if diff := cmp.Diff(tt.want, fieldSets(t, got)); diff != "" {
				t.Errorf("managed fields (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzTakeOverAgreesWithCsaupgrade: for what client-go's csaupgrade does
// (Update entries of a replaced manager into our Apply entry, whole), the
// takeover of EnsureApplied gives the same fields to the same entries,
// whatever the fields; and for any fields, the takeover of Ensure loses no
// field and invents none, and leaves other managers' entries as they were.
func FuzzTakeOverAgreesWithCsaupgrade(f *testing.F) {
	f.Add([]byte(createdFields), []byte(editedFields), []byte(appliedFields))
	f.Add([]byte(createdFields), []byte(createdFields), []byte(``))
	f.Add([]byte(`{"f:spec":{"f:replicas":{}}}`), []byte(`{}`), []byte(`{"k:{\"x\":1}":{},"v:3":{},"i:0":{}}`))
	f.Fuzz(func(t *testing.T, replaced, other, ours []byte) {
		for _, b := range [][]byte{replaced, other, ours} {
			if len(b) > 0 {
				if _, err := decodeEntry(&metav1.ManagedFieldsEntry{FieldsV1: &metav1.FieldsV1{Raw: b}}); err != nil {
					return
				}
			}
		}
		entries := []metav1.ManagedFieldsEntry{
			fieldsEntry("manager", update, "apps/v1", string(replaced)),
			fieldsEntry("kubectl-edit", update, "apps/v1", string(other)),
		}
		if len(ours) > 0 {
			entries = append(entries, fieldsEntry("op", apply, "apps/v1", string(ours)))
		}
		if !bytes.HasPrefix(bytes.TrimSpace(replaced), []byte("{")) || !bytes.HasPrefix(bytes.TrimSpace(other), []byte("{")) {
			return // csaupgrade decodes with encoding/json first; leave non-objects to the properties below
		}

		// Ensure: into our Update entry.
		tk := newTakeover("op", []string{"manager"}, "apps/v1", false)
		tk.whole = true
		got, _, err := takeOver(entries, tk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(allFields(t, entries), allFields(t, got)); diff != "" {
			t.Errorf("Ensure's takeover changed the fields owned by anyone (-before +after):\n%s", diff)
		}
		if fieldSets(t, got)["kubectl-edit/Update/apps/v1/"] != fieldSets(t, entries)["kubectl-edit/Update/apps/v1/"] {
			t.Errorf("Ensure's takeover changed another manager's entry")
		}

		// On an object that is not the Owner's, only what desired sets
		// moves: still nothing lost or invented, and every moved field is
		// one desired sets.
		partial := newTakeover("op", []string{"manager"}, "apps/v1", false)
		got, _, err = takeOver(entries, partial, func(p fieldpath.Path) bool { return managedfields.Sets(desiredContent, p, kubernetesKeys, true) })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(allFields(t, entries), allFields(t, got)); diff != "" {
			t.Errorf("a partial takeover changed the fields owned by anyone (-before +after):\n%s", diff)
		}
		for _, e := range got {
			if e.Manager != "op" || e.Operation != update {
				continue
			}
			s, err := decodeEntry(&e)
			if err != nil {
				t.Fatal(err)
			}
			s.Iterate(func(p fieldpath.Path) {
				if !managedfields.Sets(desiredContent, p, kubernetesKeys, true) && !inEntry(t, entries, "op", p) {
					t.Errorf("a partial takeover took %s, which desired does not set", p)
				}
			})
		}

		// EnsureApplied: into our Apply entry, as csaupgrade.
		tk.apply = true
		got, _, err = takeOver(entries, tk, nil)
		if err != nil {
			t.Fatal(err)
		}
		obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: entries}}
		if err := csaupgrade.UpgradeManagedFields(obj, sets.New("manager"), "op"); err != nil {
			t.Skipf("csaupgrade: %v", err)
		}
		want, have := fieldSets(t, obj.ManagedFields), fieldSets(t, got)
		if len(bytes.TrimSpace(replaced)) == 0 || empty(t, replaced) {
			// csaupgrade turns even an empty entry into our Apply entry;
			// there is nothing to take.
			delete(want, "op/Apply/apps/v1/")
			delete(have, "op/Apply/apps/v1/")
			delete(have, "manager/Update/apps/v1/")
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("EnsureApplied's takeover differs from csaupgrade.UpgradeManagedFields (-csaupgrade +ours):\n%s", diff)
		}
	})
}

func empty(t testing.TB, fields []byte) bool {
	s, err := decodeEntry(&metav1.ManagedFieldsEntry{FieldsV1: &metav1.FieldsV1{Raw: fields}})
	if err != nil {
		t.Fatal(err)
	}
	return s.Empty()
}

// allFields is the union of every entry's fields.
func allFields(t testing.TB, entries []metav1.ManagedFieldsEntry) string {
	u := &fieldpath.Set{}
	for _, e := range entries {
		s, err := decodeEntry(&e)
		if err != nil {
			t.Fatal(err)
		}
		u = u.Union(s)
	}
	return u.String()
}

// kubernetesKeys are the KeyDefault rules of compare.KubernetesRules.
var kubernetesKeys = managedfields.KeyDefaultsOf([]compare.Option{kubernetesRules})

// desiredContent is what a partial takeover in the fuzz test keeps to: the
// fields of createdFields' Deployment that a desired object sets.
var desiredContent = map[string]any{
	"metadata": map[string]any{"labels": map[string]any{"app": "memcached"}},
	"spec": map[string]any{
		"replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "memcached", "image": "memcached:1.6",
			"ports": []any{map[string]any{"name": "memcached", "containerPort": int64(11211)}},
		}}}},
	},
}

// inEntry reports whether manager's entry among entries holds p.
func inEntry(t testing.TB, entries []metav1.ManagedFieldsEntry, manager string, p fieldpath.Path) bool {
	for _, e := range entries {
		if e.Manager == manager {
			s, err := decodeEntry(&e)
			if err != nil {
				t.Fatal(err)
			}
			if s.Has(p) {
				return true
			}
		}
	}
	return false
}
