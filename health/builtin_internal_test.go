package health

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestEveryBuiltinKindReadsAlikeTypedAndUnstructured: each row of the one
// table of built-in kinds says the health of a typed object and of its
// unstructured content alike, under the row's kind, in every version
// client-go's scheme knows of it; the CustomResourceDefinition, a row
// without a Go type of client-go's, is named by its Go package.
func TestEveryBuiltinKindReadsAlikeTypedAndUnstructured(t *testing.T) {
	for gk, b := range builtins {
		if b.typ == nil {
			continue
		}
		t.Run(gk.String(), func(t *testing.T) {
			obj := reflect.New(b.typ).Interface().(client.Object)
			obj.SetNamespace("ns")
			obj.SetName("x")
			obj.SetGeneration(2)
			typedHealth, ok := typed(obj)
			if !ok || typedHealth.Kind != gk.Kind {
				t.Fatalf("typed(%T) = %v, %v; want the row's kind %s", obj, typedHealth, ok, gk.Kind)
			}
			gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
			if err != nil || len(gvks) == 0 || gvks[0].GroupKind() != gk {
				t.Fatalf("client-go's scheme says %T is %v (%v), the table %s", obj, gvks, err, gk)
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range clientgoscheme.Scheme.VersionsForGroupKind(gk) {
				u := &unstructured.Unstructured{Object: m}
				u.SetGroupVersionKind(v.WithKind(gk.Kind))
				if _, ok := typedFor(u.GroupVersionKind()); !ok {
					t.Errorf("typedFor(%s) found no Go type", u.GroupVersionKind())
				}
				h, err := Of(u)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(typedHealth, h); diff != "" {
					t.Errorf("%s: Of(unstructured) differs from Of(typed) (-typed +unstructured):\n%s", v, diff)
				}
			}
		})
	}
	for _, crd := range []client.Object{&apiextensionsv1.CustomResourceDefinition{}, &apiextensionsv1beta1.CustomResourceDefinition{}} {
		gvk := gvkOf(crd)
		if gvk.GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) || gvk.Version == "" {
			t.Errorf("gvkOf(%T) = %s", crd, gvk)
		}
		crd.SetGeneration(1)
		if h, err := Of(crd); err != nil || h.Status != InProgress || h.Reason != "Installing" {
			t.Errorf("Of(%T without conditions) = %v, %v; want InProgress, Installing", crd, h, err)
		}
	}
}
