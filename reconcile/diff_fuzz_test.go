package reconcile_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/reconcile"
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
	return [][]byte{desired, live, []byte(`{}`), []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a"},{"name":"a"}]}}}}`)}
}

// checkInvariants asserts what must hold for any inputs: no error for
// comparable inputs, x equals itself and its copy, Equal iff no paths,
// sorted paths, a report exactly when there is drift, same answer twice.
func checkInvariants(t *testing.T, x, y, xCopy any, opts ...reconcile.DiffOption) {
	t.Helper()
	for _, pair := range [][2]any{{x, x}, {x, xCopy}} {
		got, err := reconcile.Diff(pair[0], pair[1], opts...)
		if err != nil {
			t.Fatalf("Diff(x, x): %v", err)
		}
		if !got.Equal {
			t.Fatalf("Diff(x, x) not equal:\n%s", got.Report)
		}
	}
	got, err := reconcile.Diff(x, y, opts...)
	if err != nil {
		t.Fatalf("Diff(x, y): %v", err)
	}
	if got.Equal != (len(got.Paths) == 0) || got.Equal != (got.Report == "") {
		t.Fatalf("Equal=%v with %d paths and report %q", got.Equal, len(got.Paths), got.Report)
	}
	if !slices.IsSorted(got.Paths) {
		t.Fatalf("paths not sorted: %q", got.Paths)
	}
	again, _ := reconcile.Diff(x, y, opts...)
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
		checkInvariants(t, &x, &y, x.DeepCopy())
		if _, err := reconcile.Diff(&x, &y, reconcile.OwnList(path), reconcile.OwnMap(path), reconcile.IgnorePaths(path+"[*]"), reconcile.ListKey(path, "image")); err != nil {
			if !errors.Is(err, reconcile.ErrInvalidPath) {
				t.Fatalf("bad path %q: %v, want ErrInvalidPath", path, err)
			}
			return
		}
		checkInvariants(t, &x, &y, x.DeepCopy(), reconcile.OwnList(path), reconcile.OwnMap(path), reconcile.IgnorePaths(path+"[*]"))
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
		opts := []reconcile.DiffOption{reconcile.OwnList(path), reconcile.OwnMap(path), reconcile.ListKey(path, "name")}
		if _, err := reconcile.Diff(ux, uy, opts...); err != nil {
			if !errors.Is(err, reconcile.ErrInvalidPath) {
				t.Fatalf("bad path %q: %v, want ErrInvalidPath", path, err)
			}
			return
		}
		checkInvariants(t, ux, uy, ux.DeepCopy(), opts...)
	})
}
