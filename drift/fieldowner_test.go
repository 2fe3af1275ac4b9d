package drift_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// TestEnsureWithoutAFieldOwnerFailsPermanentlyAndSendsNothing: a Writer
// built without a field owner is never silent. Every form of Ensure returns
// an error wrapping errors.ErrNoFieldOwner, classed permanent (a
// controller-runtime terminal error), before it sends any request, read or
// write.
func TestEnsureWithoutAFieldOwnerFailsPermanentlyAndSendsNothing(t *testing.T) {
	type ensureFunc func(ctx context.Context, w *drift.Writer, cm *corev1.ConfigMap, opts ...drift.Option) error
	forms := []struct {
		name   string
		ensure ensureFunc
	}{
		{"Ensure", func(ctx context.Context, w *drift.Writer, cm *corev1.ConfigMap, opts ...drift.Option) error {
			_, err := w.Ensure(ctx, cm, opts...)
			return err
		}},
		{"EnsureMutate", func(ctx context.Context, w *drift.Writer, cm *corev1.ConfigMap, opts ...drift.Option) error {
			_, err := w.EnsureMutate(ctx, cm, func() error { cm.Data = map[string]string{"mode": "prod"}; return nil }, opts...)
			return err
		}},
		{"EnsureApplied", func(ctx context.Context, w *drift.Writer, cm *corev1.ConfigMap, opts ...drift.Option) error {
			_, err := w.EnsureApplied(ctx, cm, opts...)
			return err
		}},
	}
	cases := []struct {
		name string
		call func(f ensureFunc, ctx context.Context, c client.Client, cm *corev1.ConfigMap) error
	}{
		{"NewWriter with an empty name", func(f ensureFunc, ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
			return f(ctx, drift.NewWriter(c, ""), cm)
		}},
		{"Replaces without a name", func(f ensureFunc, ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
			return f(ctx, drift.NewWriter(c, ""), cm, drift.Replaces("manager"))
		}},
		{"a zero Writer", func(f ensureFunc, ctx context.Context, _ client.Client, cm *corev1.ConfigMap) error {
			return f(ctx, &drift.Writer{}, cm)
		}},
	}
	for _, f := range forms {
		for _, tc := range cases {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				var counter reconciletest.Counter
				c := counter.Wrap(env.Client(t))
				cm := configMapIn(env.Namespace(t)).(*corev1.ConfigMap)
				err := tc.call(f.ensure, t.Context(), c, cm)
				if !errors.Is(err, errors.ErrNoFieldOwner) {
					t.Fatalf("err = %v, want errors.ErrNoFieldOwner", err)
				}
				if class, _ := errors.Classify(err); class != errors.ClassPermanent || !errors.Is(err, crreconcile.TerminalError(nil)) {
					t.Errorf("class %v, terminal %v; want permanent and terminal", class, errors.Is(err, crreconcile.TerminalError(nil)))
				}
				if !strings.Contains(err.Error(), "drift.NewWriter") || !strings.Contains(err.Error(), cm.Name) {
					t.Errorf("message %q: want it to name the object and the fix", err)
				}
				if n := len(counter.Requests()); n != 0 {
					t.Errorf("%d requests, want none: %v", n, counter.Requests())
				}
			})
		}
	}
}

// sharedTarget is an object two operators write: created by someone else,
// each operator adds its own label, annotation and list elements.
type sharedTarget struct {
	name string
	// create builds the object as its creator makes it.
	create func(ns string) client.Object
	// desired is what operator op ("a" or "b") wants of it.
	desired func(ns, op string) client.Object
	// has reports what of operator op's the live object holds.
	has func(t *testing.T, live client.Object, op string) bool
}

var sharedTargets = []sharedTarget{
	{
		name: "Deployment (strategic merge patches)",
		create: func(ns string) client.Object {
			d := webDeployment()
			d.Namespace = ns
			return d
		},
		desired: func(ns, op string) client.Object {
			return &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
					Labels:      map[string]string{"team-" + op: "yes"},
					Annotations: map[string]string{"example.com/" + op: "note of " + op}},
				Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web",
					Env:  []corev1.EnvVar{{Name: strings.ToUpper(op) + "_SETTING", Value: op}},
				}}}}},
			}
		},
		has: func(t *testing.T, live client.Object, op string) bool {
			d := live.(*appsv1.Deployment)
			return d.Labels["team-"+op] == "yes" && d.Annotations["example.com/"+op] == "note of "+op &&
				slices.Contains(envNames(webContainer(d)), strings.ToUpper(op)+"_SETTING")
		},
	},
	{
		name: "Widget (custom resource, JSON merge patches)",
		create: func(ns string) client.Object {
			return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "shared"}}
		},
		desired: func(ns, op string) client.Object {
			return &testapi.Widget{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w",
					Labels:      map[string]string{"team-" + op: "yes"},
					Annotations: map[string]string{"example.com/" + op: "note of " + op}},
				Spec: testapi.WidgetSpec{
					Labels: map[string]string{op: "1"},
					Ports:  []testapi.WidgetPort{{Name: "port-" + op, Port: 80}},
				},
			}
		},
		has: func(t *testing.T, live client.Object, op string) bool {
			w := live.(*testapi.Widget)
			return w.Labels["team-"+op] == "yes" && w.Annotations["example.com/"+op] == "note of "+op && w.Spec.Labels[op] == "1" &&
				slices.ContainsFunc(w.Spec.Ports, func(p testapi.WidgetPort) bool { return p.Name == "port-"+op })
		},
	},
}

// TestTwoOperatorsOnOneObject: two operators built on the package add
// labels, annotations, map entries and list elements to one object. Under
// two names each converges, neither removes the other's, and both go quiet:
// no write in five reconciles each. Under one shared name, as every
// operator had when Ensure defaulted to "reconcilekit", each takes the
// other's fields for what it wrote before and removes them: they fight for
// ever.
func TestTwoOperatorsOnOneObject(t *testing.T) {
	for _, target := range sharedTargets {
		for _, tt := range []struct {
			name   string
			owners [2]string
			fight  bool
		}{
			{name: "one name each", owners: [2]string{"operator-a", "operator-b"}},
			{name: "one shared name, the old default", owners: [2]string{"reconcilekit", "reconcilekit"}, fight: true},
		} {
			t.Run(target.name+"/"+tt.name, func(t *testing.T) {
				ns := env.Namespace(t)
				ctx := t.Context()
				if err := env.Client(t).Create(ctx, target.create(ns), client.FieldOwner("creator")); err != nil {
					t.Fatal(err)
				}
				var counters [2]reconciletest.Counter
				clients := [2]client.Client{counters[0].Wrap(env.Client(t)), counters[1].Wrap(env.Client(t))}
				ops := [2]string{"a", "b"}
				reconcile := func(i int) drift.Outcome {
					t.Helper()
					// The object is shared on purpose: each adopts it.
					out, err := drift.NewWriter(clients[i], tt.owners[i]).Ensure(ctx, target.desired(ns, ops[i]), drift.Adopt())
					if err != nil {
						t.Fatalf("operator %s: %v", ops[i], err)
					}
					return out
				}
				live := func() client.Object {
					t.Helper()
					obj := target.create(ns)
					if err := env.Client(t).Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
						t.Fatal(err)
					}
					return obj
				}
				// Each reconciles once, a then b, as they would at startup.
				reconcile(0)
				reconcile(1)
				if tt.fight {
					if target.has(t, live(), "a") {
						t.Fatalf("b did not remove a's fields: no fight to show")
					}
					for round := range 5 {
						for i := range 2 {
							if out := reconcile(i); out.Operation != drift.OperationUpdated {
								t.Fatalf("round %d, operator %s: %q, want updated: the fight goes on", round, ops[i], out.Operation)
							}
							if other := ops[1-i]; target.has(t, live(), other) {
								t.Fatalf("round %d: operator %s left %s's fields", round, ops[i], other)
							}
						}
					}
					return
				}
				obj := live()
				for _, op := range ops {
					if !target.has(t, obj, op) {
						t.Errorf("operator %s's fields are missing: %+v", op, obj)
					}
				}
				for i := range 2 {
					counters[i].Reset()
				}
				for round := range 5 {
					for i := range 2 {
						if out := reconcile(i); out.Operation != drift.OperationUnchanged {
							t.Fatalf("round %d, operator %s: %q, want unchanged:\n%s", round, ops[i], out.Operation, out.Drift.Report)
						}
					}
				}
				for i := range 2 {
					if w := counters[i].Writes(); len(w) != 0 {
						t.Errorf("operator %s wrote %d times in 5 reconciles of a converged object, want 0: %v", ops[i], len(w), w)
					}
				}
			})
		}
	}
}

// memcached is the Deployment of kubebuilder's Memcached tutorial as its
// controller builds it, serving on port.
func memcached(ns string, port int32) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "memcached"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memcached"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "memcached", Image: "memcached:1.6.26-alpine3.19", ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1001), AllowPrivilegeEscalation: ptr.To(false),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						Ports:   []corev1.ContainerPort{{ContainerPort: port, Name: "memcached"}},
						Command: []string{"memcached", "--memory-limit=64", "-o", "modern", "-v"},
					}},
				},
			},
		},
	}
}

// adoptForms are the ways an operator ported onto the package may write the
// Deployment, and the writes each needs to adopt it.
var adoptForms = []struct {
	name   string
	writes int
	// byName: the form matches ports by name (unstructured content has no
	// Go type to say they are keyed by number), so the port changes in
	// place, with or without Replaces.
	byName bool
	ensure func(ctx context.Context, w *drift.Writer, desired *appsv1.Deployment, opts ...drift.Option) (drift.Outcome, error)
}{
	{"Ensure", 1, false, func(ctx context.Context, w *drift.Writer, desired *appsv1.Deployment, opts ...drift.Option) (drift.Outcome, error) {
		return w.Ensure(ctx, desired, opts...)
	}},
	{"Ensure unstructured", 1, true, func(ctx context.Context, w *drift.Writer, desired *appsv1.Deployment, opts ...drift.Option) (drift.Outcome, error) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
		if err != nil {
			return drift.Outcome{}, err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		return w.Ensure(ctx, u, opts...)
	}},
	{"EnsureMutate", 1, false, func(ctx context.Context, w *drift.Writer, desired *appsv1.Deployment, opts ...drift.Option) (drift.Outcome, error) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name}}
		return w.EnsureMutate(ctx, d, func() error {
			d.Spec = desired.Spec
			return nil
		}, opts...)
	}},
	// An apply carries no managedFields: the takeover is a patch of its own.
	{"EnsureApplied", 2, false, func(ctx context.Context, w *drift.Writer, desired *appsv1.Deployment, opts ...drift.Option) (drift.Outcome, error) {
		return w.EnsureApplied(ctx, desired, opts...)
	}},
}

// TestReplacesAdoptsTheDeploymentOfAKubebuilderController is the Memcached
// operator of kubebuilder's tutorial ported onto the package, meeting the
// Deployment its old controller created (field manager "manager", an
// Update) and changing the container port from 11211 to 11212 under the
// same name. With Replaces("manager") the old port is one we wrote before:
// the first write replaces it and takes the old controller's fields over,
// and a third manager's annotation and env var stay. Without it, the patch
// adds the new port beside the old one and the server refuses the
// duplicate name (422), on every reconcile.
func TestReplacesAdoptsTheDeploymentOfAKubebuilderController(t *testing.T) {
	for _, f := range adoptForms {
		for _, replaces := range []bool{true, false} {
			t.Run(f.name+"/"+map[bool]string{true: "Replaces", false: "without Replaces"}[replaces], func(t *testing.T) {
				ns := env.Namespace(t)
				ctx := t.Context()
				plain := env.Client(t)
				cr := widgetIn(ns)
				if err := plain.Create(ctx, cr); err != nil {
					t.Fatal(err)
				}
				// The kubebuilder controller: Create with a controller
				// reference, as the binary "manager".
				old := memcached(ns, 11211)
				if err := ctrlRef(cr, old); err != nil {
					t.Fatal(err)
				}
				if err := plain.Create(ctx, old, client.FieldOwner("manager")); err != nil {
					t.Fatal(err)
				}
				// A user's kubectl edit: an annotation and an env var.
				edit := []byte(`{"metadata":{"annotations":{"example.com/note":"keep me"}},"spec":{"template":{"spec":{"containers":[{"name":"memcached","env":[{"name":"EXTRA","value":"1"}]}]}}}}`)
				if err := plain.Patch(ctx, old, client.RawPatch(types.StrategicMergePatchType, edit), client.FieldOwner("kubectl-edit")); err != nil {
					t.Fatal(err)
				}

				var counter reconciletest.Counter
				c := counter.Wrap(env.Client(t))
				writer := drift.NewWriter(c, "memcached-operator")
				opts := []drift.Option{drift.Owner(cr)}
				if replaces {
					opts = append(opts, drift.Replaces("manager"))
				}
				out, err := f.ensure(ctx, writer, memcached(ns, 11212), opts...)
				switch {
				case !replaces && f.byName:
					if err != nil {
						t.Fatal(err)
					}
					return
				case !replaces:
					if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Duplicate value") {
						t.Fatalf("without Replaces: %v, want 422 Duplicate value (the old port kept beside the new one)", err)
					}
					return
				case err != nil:
					t.Fatal(err)
				}
				if out.Operation != drift.OperationUpdated || len(counter.Writes()) != f.writes {
					t.Fatalf("%q with %d writes, want updated with %d: %v\n%s", out.Operation, len(counter.Writes()), f.writes, counter.Writes(), out.Drift.Report)
				}
				if want := "spec.template.spec.containers[name=memcached].ports[containerPort=11211,protocol=TCP]"; !f.byName && !slices.Contains(out.Drift.Paths, want) {
					t.Errorf("drift %q, want it to name the old port %s", out.Drift.Paths, want)
				}
				var live appsv1.Deployment
				if err := plain.Get(ctx, client.ObjectKeyFromObject(old), &live); err != nil {
					t.Fatal(err)
				}
				c0 := live.Spec.Template.Spec.Containers[0]
				ports := names(c0.Ports, func(p corev1.ContainerPort) string { return p.Name + "/" + strconv.Itoa(int(p.ContainerPort)) })
				if diff := cmp.Diff([]string{"memcached/11212"}, ports); diff != "" {
					t.Errorf("ports (-want +got):\n%s", diff)
				}
				if live.Annotations["example.com/note"] != "keep me" || !slices.Contains(envNames(&c0), "EXTRA") {
					t.Errorf("kubectl-edit's annotation %v and env %v: want both kept", live.Annotations, c0.Env)
				}
				managers := map[string]bool{}
				for _, mf := range live.ManagedFields {
					if mf.Subresource == "" {
						managers[mf.Manager] = true
					}
				}
				if managers["manager"] || !managers["memcached-operator"] || !managers["kubectl-edit"] {
					t.Errorf("field managers %v: want memcached-operator and kubectl-edit, not manager", slices.Sorted(maps.Keys(managers)))
				}

				counter.Reset()
				for i := range 5 {
					if out, err := f.ensure(ctx, writer, memcached(ns, 11212), opts...); err != nil || out.Operation != drift.OperationUnchanged {
						t.Fatalf("reconcile %d after adopting: %q, %v; want unchanged:\n%s", i+1, out.Operation, err, out.Drift.Report)
					}
				}
				if w := counter.Writes(); len(w) != 0 {
					t.Errorf("%d writes in 5 reconciles of the adopted Deployment, want 0: %v", len(w), w)
				}
			})
		}
	}
}

// ctrlRef makes owner the controller of obj, as controllerutil does.
func ctrlRef(owner, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(owner, env.Scheme)
	if err != nil {
		return err
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)})
	return nil
}

// TestReplacesOnASharedObjectTakesOnlyWhatDesiredSets is the move from the
// old shared default: two operators both wrote one ConfigMap under
// "reconcilekit", so its entry holds the fields of both. Each moves to a
// name of its own and lists "reconcilekit" in Replaces. The object is
// nobody's child, so each takes over only the fields it sets now: neither
// removes the other's, a field of the old entry nobody sets any more stays
// (it cannot be told apart), and both go quiet.
func TestReplacesOnASharedObjectTakesOnlyWhatDesiredSets(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	plain := env.Client(t)
	desired := func(op, mode string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Labels: map[string]string{"team-" + op: "yes"}},
			Data:       map[string]string{op + "-mode": mode},
		}
	}
	// What the two left under the shared name, and a label operator a
	// stopped setting long ago.
	before := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Labels: map[string]string{"team-a": "yes", "team-b": "yes", "a-old": "yes"}},
		Data:       map[string]string{"a-mode": "on", "b-mode": "on"},
	}
	if err := plain.Create(ctx, before, client.FieldOwner("reconcilekit")); err != nil {
		t.Fatal(err)
	}
	var counter reconciletest.Counter
	c := counter.Wrap(plain)
	ensure := func(op, mode string) drift.Outcome {
		t.Helper()
		out, err := drift.NewWriter(c, "operator-"+op).Ensure(ctx, desired(op, mode), drift.Replaces("reconcilekit"))
		if err != nil {
			t.Fatalf("operator %s: %v", op, err)
		}
		return out
	}
	get := func() *corev1.ConfigMap {
		t.Helper()
		var live corev1.ConfigMap
		if err := plain.Get(ctx, client.ObjectKeyFromObject(before), &live); err != nil {
			t.Fatal(err)
		}
		return &live
	}
	// Operator a changes its mode: the write takes a's fields over, and
	// only a's.
	if out := ensure("a", "off"); out.Operation != drift.OperationUpdated || len(counter.Writes()) != 1 {
		t.Fatalf("a's change: %q with %d writes, want updated by one:\n%s", out.Operation, len(counter.Writes()), out.Drift.Report)
	}
	if live := get(); live.Labels["team-b"] != "yes" || live.Data["b-mode"] != "on" || live.Labels["a-old"] != "yes" {
		t.Fatalf("after a's move: labels %v, data %v; want b's fields and the old label kept", live.Labels, live.Data)
	}
	// Operator b has nothing to change: no write, nothing taken yet.
	if out := ensure("b", "on"); out.Operation != drift.OperationUnchanged {
		t.Fatalf("b: %q, want unchanged:\n%s", out.Operation, out.Drift.Report)
	}
	if out := ensure("b", "off"); out.Operation != drift.OperationUpdated {
		t.Fatalf("b's change: %q, want updated", out.Operation)
	}
	live := get()
	if diff := cmp.Diff(map[string]string{"team-a": "yes", "team-b": "yes", "a-old": "yes"}, live.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a-mode": "off", "b-mode": "off"}, live.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	owns := map[string][]string{}
	for _, mf := range live.ManagedFields {
		s := &fieldpath.Set{}
		if err := s.FromJSON(strings.NewReader(mf.FieldsV1.GetRawString())); err != nil {
			t.Fatal(err)
		}
		s.Leaves().Iterate(func(p fieldpath.Path) { owns[mf.Manager] = append(owns[mf.Manager], p.String()) })
		slices.Sort(owns[mf.Manager])
	}
	want := map[string][]string{
		"operator-a":   {".data.a-mode", ".metadata.labels.team-a"},
		"operator-b":   {".data.b-mode", ".metadata.labels.team-b"},
		"reconcilekit": {".metadata.labels.a-old"},
	}
	if diff := cmp.Diff(want, owns); diff != "" {
		t.Errorf("owned fields by manager (-want +got):\n%s", diff)
	}
	counter.Reset()
	for range 5 {
		for _, op := range []string{"a", "b"} {
			if out := ensure(op, "off"); out.Operation != drift.OperationUnchanged {
				t.Fatalf("operator %s after the move: %q, want unchanged:\n%s", op, out.Operation, out.Drift.Report)
			}
		}
	}
	if w := counter.Writes(); len(w) != 0 {
		t.Errorf("%d writes in 5 reconciles each after the move, want 0: %v", len(w), w)
	}
}

// TestReplacesTakeoverIsLockedByTheResourceVersion: the takeover rewrites
// the whole managedFields list, so a writer that came in between the read
// and the patch would lose its entry. The patch carries the resourceVersion
// and fails with a Conflict instead; the next attempt, on a fresh read,
// takes over and keeps the late writer's entry.
func TestReplacesTakeoverIsLockedByTheResourceVersion(t *testing.T) {
	ns := env.Namespace(t)
	ctx := t.Context()
	plain := env.Client(t)
	cr := widgetIn(ns)
	if err := plain.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	old := memcached(ns, 11211)
	if err := ctrlRef(cr, old); err != nil {
		t.Fatal(err)
	}
	if err := plain.Create(ctx, old, client.FieldOwner("manager")); err != nil {
		t.Fatal(err)
	}
	late := []byte(`{"metadata":{"annotations":{"example.com/late":"1"}}}`)
	racy := &racingClient{Client: plain, race: func() {
		if err := plain.Patch(ctx, memcached(ns, 0), client.RawPatch(types.MergePatchType, late), client.FieldOwner("late-writer")); err != nil {
			t.Error(err)
		}
	}}
	opts := []drift.Option{drift.Owner(cr), drift.Replaces("manager")}
	if _, err := drift.NewWriter(racy, "memcached-operator").Ensure(ctx, memcached(ns, 11212), opts...); !apierrors.IsConflict(err) {
		t.Fatalf("Ensure racing another writer: %v, want a Conflict", err)
	}
	if _, err := drift.NewWriter(plain, "memcached-operator").Ensure(ctx, memcached(ns, 11212), opts...); err != nil {
		t.Fatal(err)
	}
	var live appsv1.Deployment
	if err := plain.Get(ctx, client.ObjectKeyFromObject(old), &live); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range live.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	slices.Sort(managers)
	if diff := cmp.Diff([]string{"late-writer", "memcached-operator"}, managers); diff != "" {
		t.Errorf("field managers (-want +got):\n%s", diff)
	}
}
