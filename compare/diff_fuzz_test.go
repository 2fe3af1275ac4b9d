package compare_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/compare"
)

func deploymentSeeds(f *testing.F) [][]byte {
	f.Helper()
	desired, err := json.Marshal(webDeployment())
	if err != nil {
		f.Fatal(err)
	}
	y, err := os.ReadFile(defaultedFile)
	if err != nil {
		f.Fatal(err)
	}
	live, err := yaml.YAMLToJSON(y)
	if err != nil {
		f.Fatal(err)
	}
	applied := []byte(`{"metadata":{"managedFields":[{"manager":"drift-test","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:metadata":{"f:labels":{"f:x":{}}},"f:spec":{"f:minReadySeconds":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:ports":{"k:{\"containerPort\":53,\"protocol\":\"UDP\"}":{".":{}}}}}}}}}}]},` +
		`"spec":{"minReadySeconds":3,"template":{"spec":{"containers":[{"name":"a","ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53}]},{"name":"b"}]}}}}`)
	return [][]byte{desired, live, applied, []byte(`{}`), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a"},{"name":"a"}]}}}}`)}
}

// owners returns options that make each field manager of obj's
// managedFields ours in turn (and none), so the fuzzers reach the owned
// field rules with whatever managedFields they make up.
func owners(obj interface {
	GetManagedFields() []metav1.ManagedFieldsEntry
}) [][]compare.Option {
	out := [][]compare.Option{nil}
	for _, mf := range obj.GetManagedFields() {
		out = append(out, []compare.Option{compare.WithFieldOwner(mf.Manager)})
	}
	return out
}

// checkInvariants asserts what must hold for any inputs: no error for
// comparable inputs, x equals itself and its copy, Equal iff no paths,
// sorted paths, a report exactly when there is drift, same answer twice.
func checkInvariants(t *testing.T, x, y, xCopy any, opts ...compare.Option) {
	t.Helper()
	for _, pair := range [][2]any{{x, x}, {x, xCopy}} {
		got, err := kdiff(pair[0], pair[1], opts...)
		if err != nil {
			t.Fatalf("Diff(x, x): %v", err)
		}
		if !got.Equal {
			t.Fatalf("Diff(x, x) not equal:\n%s", got.Report)
		}
	}
	got, err := kdiff(x, y, opts...)
	if err != nil {
		t.Fatalf("Diff(x, y): %v", err)
	}
	if got.Equal != (len(got.Paths) == 0) || got.Equal != (got.Report == "") {
		t.Fatalf("Equal=%v with %d paths and report %q", got.Equal, len(got.Paths), got.Report)
	}
	if !slices.IsSorted(got.Paths) {
		t.Fatalf("paths not sorted: %q", got.Paths)
	}
	again, _ := kdiff(x, y, opts...)
	if diff := cmp.Diff(got.Paths, again.Paths); diff != "" || got.Report != again.Report {
		t.Fatalf("second Diff differs (-first +second):\n%s", diff)
	}
}

func FuzzDiffTyped(f *testing.F) {
	seeds := deploymentSeeds(f)
	for _, a := range seeds {
		for _, b := range seeds {
			f.Add(a, b, "spec.template.spec.containers")
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte, path string) {
		var x, y appsv1.Deployment
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return
		}
		for _, owner := range owners(&y) {
			checkInvariants(t, &x, &y, x.DeepCopy(), owner...)
		}
		if _, err := kdiff(&x, &y, compare.Own(path), compare.Own(path), compare.IgnorePaths(path+"[*]"), compare.ListKey(path, "image")); err != nil {
			if !errors.Is(err, compare.ErrInvalidPath) {
				t.Fatalf("bad path %q: %v, want ErrInvalidPath", path, err)
			}
			return
		}
		checkInvariants(t, &x, &y, x.DeepCopy(), compare.Own(path), compare.Own(path), compare.IgnorePaths(path+"[*]"))
	})
}

func FuzzDiffUnstructured(f *testing.F) {
	for _, a := range deploymentSeeds(f) {
		f.Add(a, []byte(`{"spec":{"replicas":1.5,"x":[1,"a",null,{"name":1}]}}`), "spec.x")
		f.Add(a, a, "metadata.labels")
	}
	f.Fuzz(func(t *testing.T, a, b []byte, path string) {
		var x, y map[string]any
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return
		}
		ux, uy := &unstructured.Unstructured{Object: x}, &unstructured.Unstructured{Object: y}
		checkInvariants(t, ux, uy, ux.DeepCopy())
		if _, err := meta.Accessor(uy); err == nil && !panics(func() { uy.GetManagedFields() }) {
			for _, owner := range owners(uy) {
				checkInvariants(t, ux, uy, ux.DeepCopy(), owner...)
			}
		}
		opts := []compare.Option{compare.Own(path), compare.Own(path), compare.ListKey(path, "name")}
		if _, err := kdiff(ux, uy, opts...); err != nil {
			if !errors.Is(err, compare.ErrInvalidPath) {
				t.Fatalf("bad path %q: %v, want ErrInvalidPath", path, err)
			}
			return
		}
		checkInvariants(t, ux, uy, ux.DeepCopy(), opts...)
	})
}

// panics reports whether f panics.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// FuzzDiffManagedFields: whatever bytes a managedFields entry of ours holds
// (and whatever another manager's holds), Diff must not fail or panic, and
// must decide as it explains. Valid entries are seeded from the server.
func FuzzDiffManagedFields(f *testing.F) {
	live := loadDefaulted(f)
	ours := live.ManagedFields[0].FieldsV1.GetRawBytes()
	f.Add(ours, []byte(`{"f:spec":{"f:replicas":{}}}`), "Update")
	f.Add(ours, ours, "Apply")
	f.Add([]byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"GONE\"}":{".":{}}}}}}}}}`), []byte(`{}`), "Update")
	f.Add([]byte(`{"k:{\"x\":1}":{},"v:3":{},"i:0":{},"f:metadata":{"f:labels":{"f:app":{}}}}`), []byte(`not json`), "Apply")
	f.Fuzz(func(t *testing.T, oursRaw, theirsRaw []byte, op string) {
		l := live.DeepCopy()
		l.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: testOwner, Operation: metav1.ManagedFieldsOperationType(op), APIVersion: "apps/v1", FieldsV1: metav1.NewFieldsV1(string(oursRaw))},
			{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsV1: metav1.NewFieldsV1(string(theirsRaw))},
		}
		desired := webDeployment()
		desired.Spec.Template.Spec.Containers[0].Env = nil
		checkInvariants(t, desired, l, desired.DeepCopy(), withOwner)
		if json.Valid(oursRaw) && json.Valid(theirsRaw) {
			ul := toUnstructured(t, l)
			ul.SetAPIVersion("apps/v1")
			ul.SetKind("Deployment")
			ud := toUnstructured(t, desired)
			checkInvariants(t, ud, ul, ud.DeepCopy(), withOwner)
		}
	})
}
