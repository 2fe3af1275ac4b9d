package drift_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/drift"
)

// gadgetCRD is a custom resource whose spec.endpoints is a list keyed by
// name and zone, the zone defaulted by the API server to "a": what a
// compare.KeyDefault describes, for a kind of the operator's own.
var gadgetCRD = &apiextensionsv1.CustomResourceDefinition{
	ObjectMeta: metav1.ObjectMeta{Name: "gadgets.testing.reconcilekit.io"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "testing.reconcilekit.io",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"endpoints": {
							Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name", "zone"},
							Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
								Type: "object", Required: []string{"name"},
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"name": {Type: "string"},
									"zone": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"a"`)}},
									"port": {Type: "integer"},
								},
							}},
						},
					}},
				},
			}},
		}},
	},
}

// gadget is a Gadget of endpoints {name, port}, none naming its zone.
func gadget(ns string, endpoints ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "testing.reconcilekit.io/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": ns, "name": "g"},
		"spec":     map[string]any{"endpoints": endpoints},
	}}
}

// owned returns, by manager, the paths each entry of the main resource of
// obj owns.
func owned(t *testing.T, obj client.Object) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Subresource != "" {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(strings.NewReader(mf.FieldsV1.GetRawString())); err != nil {
			t.Fatal(err)
		}
		s.Iterate(func(p fieldpath.Path) { out[mf.Manager] = append(out[mf.Manager], p.String()) })
		slices.Sort(out[mf.Manager])
	}
	return out
}

// TestPartialTakeoverFindsListElementsByTheCallsRules: a partial takeover
// (drift.Replaces on an object no Owner controls) takes what desired sets,
// finding a list element as the call's comparison does, by the KeyDefault
// rules the caller passed through drift.CompareOptions (here: a zone left
// out is "a", as the CRD defaults it), not by compare.KubernetesRules
// alone. The endpoint desired sets, and its name and port, become the
// operator's; the zone desired leaves to the server stays the old
// manager's.
func TestPartialTakeoverFindsListElementsByTheCallsRules(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	plain := env.Client(t)
	if err := plain.Create(ctx, gadget(ns, map[string]any{"name": "web", "port": int64(1)}), client.FieldOwner("manager")); err != nil {
		t.Fatal(err)
	}
	zone := compare.KeyDefault{Field: "zone", Value: "a"}
	out, err := drift.NewWriter(plain, "operator").Ensure(ctx, gadget(ns, map[string]any{"name": "web", "port": int64(2)}),
		drift.Replaces("manager"), drift.CompareOptions(compare.Rules(zone)))
	if err != nil {
		t.Fatal(err)
	}
	if out.Operation != drift.OperationUpdated {
		t.Fatalf("%q, want updated (the port)", out.Operation)
	}
	live := gadget(ns)
	if err := plain.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	web := `.spec.endpoints[name="web",zone="a"]`
	want := map[string][]string{
		"operator": {".spec", ".spec.endpoints", web, web + ".name", web + ".port"},
		"manager":  {web + ".zone"},
	}
	if diff := cmp.Diff(want, owned(t, live)); diff != "" {
		t.Errorf("owned paths by manager (-want +got):\n%s", diff)
	}
}

// TestPartialTakeoverOfUnstructuredContentTakesItsZeroValues: in
// unstructured desired content a key present with a zero value is set (so
// compare.Diff counts it), and a partial takeover takes it over too: the
// empty label and the empty data entry desired sets become the operator's,
// and when desired stops setting them, they are removed like any field it
// wrote before.
func TestPartialTakeoverOfUnstructuredContentTakesItsZeroValues(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	plain := env.Client(t)
	configMap := func(labels, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": ns, "name": "zeros", "labels": labels},
			"data":     data,
		}}
	}
	// The old controller, "reconcilekit", wrote all four.
	if err := plain.Create(ctx, configMap(map[string]any{"app": "web", "tier": ""}, map[string]any{"mode": "on", "note": ""}),
		client.FieldOwner("reconcilekit")); err != nil {
		t.Fatal(err)
	}
	writer := drift.NewWriter(plain, "operator")
	ensure := func(desired *unstructured.Unstructured) drift.Outcome {
		t.Helper()
		out, err := writer.Ensure(ctx, desired, drift.Replaces("reconcilekit"))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := ensure(configMap(map[string]any{"app": "web", "tier": ""}, map[string]any{"mode": "off", "note": ""})); out.Operation != drift.OperationUpdated {
		t.Fatalf("the mode's change: %q, want updated", out.Operation)
	}
	live := configMap(nil, nil)
	if err := plain.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	if got := owned(t, live)["operator"]; !slices.Contains(got, ".metadata.labels.tier") || !slices.Contains(got, ".data.note") {
		t.Errorf("the operator owns %q, want the empty label and data entry desired sets among them", got)
	}
	// Desired no longer sets them: fields the operator wrote before, drift.
	if out := ensure(configMap(map[string]any{"app": "web"}, map[string]any{"mode": "off"})); out.Operation != drift.OperationUpdated {
		t.Fatalf("desired without the empty label and data entry: %q, want updated", out.Operation)
	}
	if err := plain.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"app": "web"}, live.GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if data, _, _ := unstructured.NestedStringMap(live.Object, "data"); !cmp.Equal(map[string]string{"mode": "off"}, data) {
		t.Errorf("data %v, want only mode", data)
	}
}
