package applyset_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// TestPlanAgreesWithApply proves, on every fixture of a set's life, that
// Apply with Plan sends no write and says exactly what the Apply that
// follows does: the same action for the parent and every child, the same
// drifted and corrected paths, the same members kept, and as many writes
// as the real run sends (counted at the client).
func TestPlanAgreesWithApply(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)

	// What the operator wants, by feature.
	type features struct {
		service, remote, widget, gadget bool
		value                           string
	}
	desired := func(f features) []applyset.Child {
		cm := configMap(ns, "config", f.value)
		out := []applyset.Child{{Object: cm}, {Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
			Data: map[string][]byte{"user": []byte("app")}}, DependsOn: []client.Object{cm}}}
		if f.service {
			out = append(out, applyset.Child{Object: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}})
		}
		if f.remote {
			out = append(out, applyset.Child{Object: configMap(other, "record", f.value)})
		}
		if f.widget {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
			out = append(out, applyset.Child{Object: w}, applyset.Child{Object: configMap(ns, "uses-db", "1"), DependsOn: []client.Object{w}})
		}
		if f.gadget {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("not.installed.test/v1")
			u.SetKind("Gadget")
			u.SetNamespace(ns)
			u.SetName("g")
			out = append(out, applyset.Child{Object: u})
		}
		return out
	}
	type outcome struct {
		Actions   []string
		Paths     map[string][]string
		Corrected map[string][]string
		Kept      []applyset.Ref
		Writes    int
	}
	summary := func(r applyset.Result) outcome {
		o := outcome{Actions: actions(r), Paths: map[string][]string{}, Corrected: map[string][]string{}, Kept: r.Kept, Writes: r.Writes()}
		for _, ch := range r.Children {
			if len(ch.Paths) > 0 {
				o.Paths[ch.Ref.String()] = ch.Paths
			}
			if len(ch.Corrected) > 0 {
				o.Corrected[ch.Ref.String()] = ch.Corrected
			}
		}
		return o
	}
	for _, step := range []struct {
		name   string
		before func(t *testing.T) // what happens in the cluster first
		want   features
	}{
		{name: "a new set", want: features{value: "1"}},
		{name: "converged", want: features{value: "1"}},
		{name: "a child changed", want: features{value: "2"}},
		{name: "a feature on: a new kind", want: features{value: "2", service: true}},
		{name: "a child in another namespace", want: features{value: "2", service: true, remote: true}},
		{name: "someone else's drift", want: features{value: "2", service: true, remote: true}, before: func(t *testing.T) {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"edited"}}`))
			if err := c.Patch(t.Context(), configMap(other, "record", ""), patch, client.FieldOwner("kubectl-edit")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a feature off: its kind's last member pruned", want: features{value: "2", remote: true}},
		{name: "the record shrinks", want: features{value: "2", remote: true}},
		{name: "a child removed, another namespace", want: features{value: "2"}},
		{name: "a dependency not ready", want: features{value: "2", widget: true}},
		{name: "a kind not installed", want: features{value: "2", widget: true, gadget: true}},
		{name: "labels copied onto a foreign object", want: features{value: "2", widget: true, gadget: true}, before: func(t *testing.T) {
			copied := configMap(ns, "copied", "x")
			copied.Labels = map[string]string{applyset.PartOfLabel: parent.Labels[applyset.IDLabel]}
			if err := c.Create(t.Context(), copied, client.FieldOwner("label-copier")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "everything off", want: features{}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			reqs.Reset()
			plan, err := set.Apply(t.Context(), parent, desired(step.want), applyset.Plan())
			if err != nil {
				t.Fatal(err)
			}
			if w := writesOf(reqs.Counts()); len(w) != 0 {
				t.Fatalf("the plan wrote %v", w)
			}
			reqs.Reset()
			res, err := set.Apply(t.Context(), parent, desired(step.want))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(summary(plan), summary(res)); diff != "" {
				t.Errorf("the Apply did otherwise than planned (-plan +apply):\n%s", diff)
			}
			sent := 0
			for _, n := range writesOf(reqs.Counts()) {
				sent += n
			}
			if sent != plan.Writes() {
				t.Errorf("the Apply sent %d writes (%v); the plan said %d:\n%s", sent, reqs.Counts(), plan.Writes(), plan)
			}
			t.Logf("plan:\n%s", plan)
		})
	}
}
