package compare_test

import (
	"encoding/json"
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/compare"
)

// FuzzOverlayLeavesNoDrift: what package drift's Ensure patches is actual
// with desired's drift written over it (Overlay, removals of fields we
// wrote before included); comparing desired with that must find no drift
// left, for typed and unstructured objects alike, with and without a field
// owner.
func FuzzOverlayLeavesNoDrift(f *testing.F) {
	y, err := os.ReadFile("testdata/deployment-defaulted.yaml")
	if err != nil {
		f.Fatal(err)
	}
	live, err := yaml.YAMLToJSON(y)
	if err != nil {
		f.Fatal(err)
	}
	desired := []byte(`{"metadata":{"labels":{"app":"web","new":"1"}},"spec":{"replicas":3,"template":{"spec":{"containers":[` +
		`{"name":"web","image":"nginx:1.26","ports":[{"name":"http","containerPort":9090}],"env":[{"name":"MODE","value":"x"}]},` +
		`{"name":"extra","tolerations":[{"key":"k"}]}],"tolerations":[{"key":"a"}]}}}}`)
	for _, d := range [][]byte{desired, live, []byte(`{}`)} {
		f.Add(d, live)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var d, l appsv1.Deployment
		if json.Unmarshal(a, &d) == nil && json.Unmarshal(b, &l) == nil {
			overlayConverges(t, &d, &l)
		}
		var dm, lm map[string]any
		if json.Unmarshal(a, &dm) == nil && json.Unmarshal(b, &lm) == nil {
			overlayConverges(t, &unstructured.Unstructured{Object: dm}, &unstructured.Unstructured{Object: lm})
		}
	})
}

func overlayConverges(t *testing.T, desired, live client.Object) {
	t.Helper()
	for _, opts := range [][]compare.Option{nil, kube, append(kube[:len(kube):len(kube)], withOwner)} {
		merged := live.DeepCopyObject().(client.Object)
		if err := compare.Overlay(desired.DeepCopyObject(), merged, opts...); err != nil {
			t.Fatal(err)
		}
		c, err := compare.Diff(desired, merged, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Equal {
			t.Fatalf("drift left after the overlay (%d options):\n%s", len(opts), c.Report)
		}
	}
}
