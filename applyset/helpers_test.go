package applyset_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
)

// newParent creates the parent of a test's set: a ConfigMap, which
// KEP-3659 allows as a parent, in ns.
func newParent(t *testing.T, c client.Client, ns string) *corev1.ConfigMap {
	t.Helper()
	p := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func configMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": value}}
}

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
}

// children wraps objects as children without dependencies.
func children(objs ...client.Object) []applyset.Child {
	out := make([]applyset.Child, len(objs))
	for i, o := range objs {
		out[i] = applyset.Child{Object: o}
	}
	return out
}

// actions returns "action ref" per child of a result, and the parent's.
func actions(r applyset.Result) []string {
	out := []string{"parent " + string(r.Parent)}
	for _, o := range r.Children {
		out = append(out, string(o.Action)+" "+o.Ref.String())
	}
	return out
}

// events records the events a Set's Recorder is given.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, eventtype+" "+reason+" "+fmt.Sprintf(note, args...))
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// gadgetCRD is the CRD of the namespaced kind Gadget of group (v1, any
// fields): a kind the tests install while a parent waits for it.
func gadgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
		},
	}
}
