package applyset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

func deployment(ns string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

// TestDriftCorrectedNamesSomeoneElsesChange proves that a patch putting
// back what another field manager changed (kubectl scale, kubectl edit)
// records a DriftCorrected event naming the fields and the manager, and
// counts it by kind, while the operator's own change of what it wants is
// patched silently; and that neither loops: the next Apply writes nothing.
func TestDriftCorrectedNamesSomeoneElsesChange(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	rec := &events{}
	set := applyset.New(c, testOwner)
	set.Recorder = rec
	apply := func(replicas int32, image string) applyset.Result {
		t.Helper()
		res, err := set.Apply(t.Context(), parent, children(deployment(ns, replicas, image)))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	apply(2, "nginx:1.27")
	corrected := map[string]string{"kind": "Deployment"}
	before := metricstest.Value(t, "reconcilekit_drift_corrected_total", corrected)

	// Someone scales it and changes its image, as kubectl edit would.
	body := `{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"web","image":"nginx:evil"}]}}}}`
	if err := c.Patch(t.Context(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
		client.RawPatch(types.StrategicMergePatchType, []byte(body)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	res := apply(2, "nginx:1.27")
	want := []string{"spec.replicas", "spec.template.spec.containers[name=web].image"}
	if diff := cmp.Diff(want, res.Children[0].Corrected); diff != "" {
		t.Errorf("Corrected (-want +got):\n%s", diff)
	}
	wantEvents := []string{"Warning DriftCorrected Deployment " + ns + "/web: spec.replicas, spec.template.spec.containers[name=web].image changed by kubectl-edit; put back"}
	if diff := cmp.Diff(wantEvents, rec.all()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := metricstest.Value(t, "reconcilekit_drift_corrected_total", corrected) - before; got != 1 {
		t.Errorf("reconcilekit_drift_corrected_total{kind=Deployment} grew by %v, want 1", got)
	}

	// The operator's own change: patched, not someone else's drift.
	res = apply(3, "nginx:1.28")
	if o := res.Children[0]; o.Action != applyset.ActionPatch || len(o.Corrected) != 0 {
		t.Errorf("the operator's own change: %v, corrected %v; want a patch and nothing corrected", o, o.Corrected)
	}
	if n := len(rec.all()); n != 1 {
		t.Errorf("%d events; the operator's own change recorded one", n)
	}
	reqs.Reset()
	if res := apply(3, "nginx:1.28"); res.Writes() != 0 {
		t.Errorf("the Apply after the correction says %s", res)
	}
	if w := writesOf(reqs.Counts()); len(w) != 0 {
		t.Errorf("the Apply after the correction wrote %v", w)
	}
}

// TestPruneRefusedStaysAndIsRetried proves that a delete the server refuses
// (an admission webhook answers 400; RBAC 403) leaves the member where it
// is and in the parent's record, returns a transient *PruneError naming it
// (retried with backoff, not Stalled), and that the next Apply, once the
// server allows it, deletes it.
func TestPruneRefusedStaysAndIsRetried(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	refuse := true
	c := interceptor.NewClient(base, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if refuse {
			return errors.New(`admission webhook "protect.example.com" denied the request: protected`)
		}
		return c.Delete(ctx, obj, opts...)
	}})
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	if _, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1"), configMap(ns, "protected", "1"))); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1")))
	pe, ok := errors.AsType[*applyset.PruneError](err)
	if !ok {
		t.Fatalf("Apply with a refused delete returned %v, want a *applyset.PruneError", err)
	}
	if len(pe.Failed) != 1 || pe.Failed[0].Ref.Name != "protected" || !strings.Contains(err.Error(), "ConfigMap "+ns+"/protected") {
		t.Errorf("the PruneError does not name the ConfigMap: %v", err)
	}
	if class, _ := errors.Classify(err); class != errors.ClassTransient {
		t.Errorf("the error is %v, want transient (retried with backoff)", class)
	}
	if r := errors.Reason(err); r != applyset.ReasonPruneFailed {
		t.Errorf("the error's reason is %q, want %q", r, applyset.ReasonPruneFailed)
	}
	if h := res.Health(); h.Reason != applyset.ReasonPruneFailed || h.Name != "protected" {
		t.Errorf("the set's health is %v, want the refused ConfigMap named", h)
	}
	if err := base.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "protected"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the refused ConfigMap: %v", err)
	}
	if _, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1"))); err == nil {
		t.Error("the next Apply, still refused, succeeded")
	}
	refuse = false
	res, err = set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"parent unchanged", "unchanged ConfigMap " + ns + "/keep", "prune ConfigMap " + ns + "/protected"}, actions(res)); diff != "" {
		t.Errorf("the Apply once allowed (-want +got):\n%s", diff)
	}
}

// TestStuckFinalizerWaits proves a member whose deletion waits for a
// finalizer keeps its place in the record, is not deleted again, and names
// what it waits for in the set's health.
func TestStuckFinalizerWaits(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	stuck := configMap(ns, "stuck", "1")
	stuck.Finalizers = []string{"example.com/never"}
	if _, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1"), stuck)); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1"))); err != nil {
		t.Fatal(err)
	}
	reqs.Reset()
	res, err := set.Apply(t.Context(), parent, children(configMap(ns, "keep", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"parent unchanged", "unchanged ConfigMap " + ns + "/keep", "wait ConfigMap " + ns + "/stuck"}, actions(res)); diff != "" {
		t.Errorf("Apply while the member's finalizer holds it (-want +got):\n%s", diff)
	}
	if h := res.Health(); h.Reason != "Terminating" || !strings.Contains(h.Message, "example.com/never") {
		t.Errorf("the set's health is %v, want the finalizer named", h)
	}
	if w := writesOf(reqs.Counts()); len(w) != 0 {
		t.Errorf("Apply wrote %v while the member is being deleted", w)
	}
	// Let it go, for the namespace's sake.
	got := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(stuck), got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = nil
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputIsPermanentAndWritesNothing proves bad input is refused with
// a permanent ErrInvalidChildren, reason InvalidChildren, before any
// request that writes.
func TestBadInputIsPermanentAndWritesNothing(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	a, b := configMap(ns, "a", "1"), configMap(ns, "b", "1")
	for _, tc := range []struct {
		name     string
		children []applyset.Child
		want     string
	}{
		{"two of one name", children(a, configMap(ns, "a", "2")), "are both ConfigMap " + ns + "/a"},
		{"a cycle", []applyset.Child{{Object: a, DependsOn: []client.Object{b}}, {Object: b, DependsOn: []client.Object{a}}}, "a dependency cycle among ConfigMap " + ns + "/a, ConfigMap " + ns + "/b"},
		{"a dependency not in the set", []applyset.Child{{Object: a, DependsOn: []client.Object{b}}}, "depends on ConfigMap " + ns + "/b, which is not in the set"},
		{"a cluster-scoped child with a namespace", children(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}), "Namespace " + ns + "/x is cluster-scoped and has namespace"},
		{"a namespaced child without one", children(configMap("", "c", "1")), "ConfigMap c is namespaced and has no namespace"},
		{"a nil object", []applyset.Child{{}}, "child 0 is nil"},
		{"a nil dependency", []applyset.Child{{Object: a, DependsOn: []client.Object{nil}}}, "dependency 0 of ConfigMap " + ns + "/a is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs.Reset()
			_, err := set.Apply(t.Context(), parent, tc.children)
			if !errors.Is(err, applyset.ErrInvalidChildren) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply returned %v, want ErrInvalidChildren saying %q", err, tc.want)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("the error is %v, want permanent", class)
			}
			if r := errors.Reason(err); r != applyset.ReasonInvalidChildren {
				t.Errorf("the error's reason is %q", r)
			}
			if n := reqs.Counts(); len(n) != 0 {
				t.Errorf("Apply sent %v before refusing", n)
			}
		})
	}
}
