package drift_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// form is one way to ensure an object: Ensure (patches) or EnsureApplied
// (server-side apply), on the typed object or on its unstructured form.
type form struct {
	name         string
	unstructured bool
	apply        bool
}

var forms = []form{
	{name: "Ensure"},
	{name: "Ensure unstructured", unstructured: true},
	{name: "EnsureApplied", apply: true},
	{name: "EnsureApplied unstructured", unstructured: true, apply: true},
}

func (f form) ensure(t *testing.T, c client.Client, obj client.Object) drift.Outcome {
	t.Helper()
	if f.unstructured {
		obj = unstructuredOf(t, obj)
	}
	var out drift.Outcome
	var err error
	if f.apply {
		out, err = drift.NewWriter(c, testOwner).EnsureApplied(t.Context(), obj)
	} else {
		out, err = drift.NewWriter(c, testOwner).Ensure(t.Context(), obj)
	}
	if err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	return out
}

// asOther writes as another field manager: get, change, patch.
func asOther(t *testing.T, c client.Client, obj client.Object, change func(client.Object)) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	change(obj)
	patch := client.MergeFrom(before)
	if _, isCR := obj.(*testapi.Widget); !isCR {
		patch = client.StrategicMergeFrom(before)
	}
	if err := c.Patch(t.Context(), obj, patch, client.FieldOwner("other")); err != nil {
		t.Fatal(err)
	}
}

func webContainer(d *appsv1.Deployment) *corev1.Container {
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "web" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

func names[T any](list []T, name func(T) string) []string {
	var out []string
	for _, e := range list {
		out = append(out, name(e))
	}
	slices.Sort(out)
	return out
}

func envNames(c *corev1.Container) []string {
	return names(c.Env, func(e corev1.EnvVar) string { return e.Name })
}

// servicePortsIn is a Service whose ports set every field the server would
// default, so its unstructured form sets nothing to zero.
func servicePortsIn(ns string, metricsPort int32) client.Object {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "metrics", Port: metricsPort, TargetPort: intstr.FromInt32(metricsPort)},
			},
		},
	}
}

func widgetPortsIn(ns string, ports ...string) client.Object {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Labels: map[string]string{}}, Spec: testapi.WidgetSpec{Labels: map[string]string{}}}
	for i, p := range ports {
		w.Spec.Ports = append(w.Spec.Ports, testapi.WidgetPort{Name: p, Port: int32(i + 1)})
		w.Spec.Labels[p] = "1"
		w.Labels[p] = "1"
	}
	return w
}

// injectSidecarAndEnv is another field manager adding a container and an env
// var to a Deployment.
func injectSidecarAndEnv(o client.Object) {
	d := o.(*appsv1.Deployment)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "injected", Image: "proxy:1"})
	webContainer(d).Env = append(webContainer(d).Env, corev1.EnvVar{Name: "FOREIGN", Value: "1"})
}

// removalCases are desired objects that stop setting something the field
// owner wrote before, while another field manager adds its own elements.
var removalCases = []struct {
	name string
	// before and after are desired, before and after the change.
	before, after func(ns string) client.Object
	// other is what another field manager adds between them.
	other func(client.Object)
	// removed is a path the converging write's drift names, for typed
	// forms and, when set, for unstructured ones.
	removed, removedUnstructured string
	// check asserts the converged live object.
	check func(t *testing.T, live client.Object, f form)
}{
	{
		name:   "Deployment: container port 8080 to 9090 under the same name",
		before: deploymentIn,
		after: func(ns string) client.Object {
			d := deploymentIn(ns).(*appsv1.Deployment)
			webContainer(d).Ports[0].ContainerPort = 9090
			return d
		},
		other:   injectSidecarAndEnv,
		removed: "spec.template.spec.containers[name=web].ports[containerPort=8080,protocol=TCP]",
		check: func(t *testing.T, live client.Object, _ form) {
			d := live.(*appsv1.Deployment)
			ports := names(webContainer(d).Ports, func(p corev1.ContainerPort) string { return p.Name + "/" + strconv.Itoa(int(p.ContainerPort)) })
			if diff := cmp.Diff([]string{"http/9090"}, ports); diff != "" {
				t.Errorf("web ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"injected", "sidecar", "web"}, names(d.Spec.Template.Spec.Containers, func(c corev1.Container) string { return c.Name })); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"FOREIGN", "LOG", "MODE"}, envNames(webContainer(d))); diff != "" {
				t.Errorf("web env (-want +got):\n%s", diff)
			}
		},
	},
	{
		name:   "Deployment: an env var removed",
		before: deploymentIn,
		after: func(ns string) client.Object {
			d := deploymentIn(ns).(*appsv1.Deployment)
			webContainer(d).Env = webContainer(d).Env[:1] // MODE stays, LOG goes
			return d
		},
		other:               injectSidecarAndEnv,
		removed:             "spec.template.spec.containers[name=web].env[name=LOG]",
		removedUnstructured: "spec.template.spec.containers[name=web].env[name=LOG]",
		check: func(t *testing.T, live client.Object, _ form) {
			d := live.(*appsv1.Deployment)
			if diff := cmp.Diff([]string{"FOREIGN", "MODE"}, envNames(webContainer(d))); diff != "" {
				t.Errorf("web env (-want +got):\n%s", diff)
			}
			if len(d.Spec.Template.Spec.Containers) != 3 {
				t.Errorf("containers %v, want web, sidecar and injected", d.Spec.Template.Spec.Containers)
			}
		},
	},
	{
		name:   "Service: port 9090 to 9191 under the same name",
		before: func(ns string) client.Object { return servicePortsIn(ns, 9090) },
		after:  func(ns string) client.Object { return servicePortsIn(ns, 9191) },
		other: func(o client.Object) {
			s := o.(*corev1.Service)
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "extra", Port: 7070})
		},
		removed: "spec.ports[port=9090,protocol=TCP]",
		check: func(t *testing.T, live client.Object, _ form) {
			s := live.(*corev1.Service)
			got := names(s.Spec.Ports, func(p corev1.ServicePort) string { return p.Name + "/" + strconv.Itoa(int(p.Port)) })
			if diff := cmp.Diff([]string{"extra/7070", "http/80", "metrics/9191"}, got); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		},
	},
	{
		name:   "Widget (custom resource): a keyed list element and a map entry removed",
		before: func(ns string) client.Object { return widgetPortsIn(ns, "a", "b") },
		after:  func(ns string) client.Object { return widgetPortsIn(ns, "a") },
		other: func(o client.Object) {
			w := o.(*testapi.Widget)
			w.Spec.Ports = append(w.Spec.Ports, testapi.WidgetPort{Name: "c", Port: 3})
			w.Spec.Labels["c"] = "1"
		},
		removed:             "spec.ports[name=b]",
		removedUnstructured: "spec.ports[name=b]",
		check: func(t *testing.T, live client.Object, _ form) {
			w := live.(*testapi.Widget)
			if diff := cmp.Diff([]string{"a", "c"}, names(w.Spec.Ports, func(p testapi.WidgetPort) string { return p.Name })); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"a": "1", "c": "1"}, w.Spec.Labels); diff != "" {
				t.Errorf("spec.labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"a": "1"}, w.Labels); diff != "" {
				t.Errorf("metadata.labels (-want +got):\n%s", diff)
			}
		},
	},
}

// TestEnsureRemovesWhatItWroteBefore: what the field owner set before and
// desired no longer sets is removed in one write, what another field manager
// added survives every reconcile, and once converged neither more reconciles
// nor a fresh client write anything.
func TestEnsureRemovesWhatItWroteBefore(t *testing.T) {
	for _, tc := range removalCases {
		for _, f := range forms {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				var counter reconciletest.Counter
				c := counter.Wrap(env.Client(t))
				other := env.Client(t)
				ns := env.Namespace(t)
				writes := func() int { return len(counter.Writes()) }

				if out := f.ensure(t, c, tc.before(ns)); out.Operation != drift.OperationCreated {
					t.Fatalf("first: %q, want created", out.Operation)
				}
				asOther(t, other, tc.before(ns), tc.other)
				if out := f.ensure(t, c, tc.before(ns)); out.Operation != drift.OperationUnchanged || writes() != 1 {
					t.Fatalf("after the other writer: %q with %d writes in all; want unchanged (its additions are not drift):\n%s", out.Operation, writes(), out.Drift.Report)
				}

				out := f.ensure(t, c, tc.after(ns))
				if out.Operation != drift.OperationUpdated || writes() != 2 {
					t.Fatalf("the change: %q with %d writes in all, want updated by exactly one write:\n%s", out.Operation, writes(), out.Drift.Report)
				}
				removed := tc.removed
				if f.unstructured {
					removed = tc.removedUnstructured
				}
				if removed != "" && !slices.Contains(out.Drift.Paths, removed) {
					t.Errorf("drift paths %q, want them to name the removal %s", out.Drift.Paths, removed)
				}
				live := tc.after(ns)
				if err := other.Get(t.Context(), client.ObjectKeyFromObject(live), live); err != nil {
					t.Fatal(err)
				}
				tc.check(t, live, f)

				for i := range 5 {
					if out := f.ensure(t, c, tc.after(ns)); out.Operation != drift.OperationUnchanged {
						t.Fatalf("reconcile %d after converging: %q, want unchanged:\n%s", i+1, out.Operation, out.Drift.Report)
					}
				}
				var fresh reconciletest.Counter
				if out := f.ensure(t, fresh.Wrap(env.Client(t)), tc.after(ns)); out.Operation != drift.OperationUnchanged || len(fresh.Writes()) != 0 {
					t.Fatalf("a fresh client: %q with %d writes, want unchanged and none:\n%s", out.Operation, len(fresh.Writes()), out.Drift.Report)
				}
				if writes() != 2 {
					t.Errorf("%d writes in all, want 2: the create and the change", writes())
				}
			})
		}
	}
}

// TestEnsureUnstructuredCustomResourceOfUnknownType pins down what is and is
// not detected for a custom resource whose Go type the client's scheme does
// not have: list elements are keyed in managedFields itself, so a removed
// element is found, and labels are a map in every object; a map entry in the
// spec cannot be told from a struct field the CRD defaulted, so Ensure
// (Update ownership) leaves it, while EnsureApplied (Apply ownership, no
// defaults) removes it.
func TestEnsureUnstructuredCustomResourceOfUnknownType(t *testing.T) {
	for _, apply := range []bool{false, true} {
		t.Run(map[bool]string{false: "Ensure", true: "EnsureApplied"}[apply], func(t *testing.T) {
			c, err := client.New(env.Config, client.Options{Scheme: clientgoscheme.Scheme}) // no Widget
			if err != nil {
				t.Fatal(err)
			}
			ns := env.Namespace(t)
			ensure := func(ports ...string) drift.Outcome {
				u := toUnstructured(t, widgetPortsIn(ns, ports...))
				u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
				var out drift.Outcome
				if apply {
					out, err = drift.NewWriter(c, testOwner).EnsureApplied(t.Context(), u)
				} else {
					out, err = drift.NewWriter(c, testOwner).Ensure(t.Context(), u)
				}
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			ensure("a", "b")
			out := ensure("a")
			wantPaths := []string{"metadata.labels.b", "spec.ports[name=b]"}
			if apply {
				wantPaths = []string{"metadata.labels.b", "spec.labels.b", "spec.ports[name=b]"}
			}
			if diff := cmp.Diff(wantPaths, out.Drift.Paths); diff != "" {
				t.Errorf("drift paths (-want +got):\n%s", diff)
			}
			if out := ensure("a"); out.Operation != drift.OperationUnchanged {
				t.Errorf("again: %q, want unchanged:\n%s", out.Operation, out.Drift.Report)
			}
		})
	}
}

// TestEnsurePodDefaultsAndAdmissionAreNeverDrift: a Pod's spec is immutable
// once created, and the server adds to it: defaults it records as the
// creator's (requests copied from limits, imagePullPolicy, ...) and what
// admission plugins add (here LimitRanger's default memory requests and
// limits, DefaultTolerationSeconds' tolerations), which are nobody's. None of
// it is drift; a label dropped from desired is, and is removed from the
// live Pod's metadata in one write.
func TestEnsurePodDefaultsAndAdmissionAreNeverDrift(t *testing.T) {
	pod := func(ns string, labels ...string) client.Object {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run", Labels: map[string]string{}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox:1.36",
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}},
				Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			},
		}
		for _, l := range labels {
			p.Labels[l] = "1"
		}
		return p
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			var counter reconciletest.Counter
			c := counter.Wrap(env.Client(t))
			ns := env.Namespace(t)
			limits := &corev1.LimitRange{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
					Type:           corev1.LimitTypeContainer,
					Default:        corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
					DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				}}},
			}
			if err := env.Client(t).Create(t.Context(), limits); err != nil {
				t.Fatal(err)
			}
			f.ensure(t, c, pod(ns, "app", "tier"))
			var live corev1.Pod
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "run"}, &live); err != nil {
				t.Fatal(err)
			}
			if _, ok := live.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok {
				t.Fatalf("the server did not copy the cpu limit into requests: %v", live.Spec.Containers[0].Resources)
			}
			if _, ok := live.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; !ok {
				t.Fatalf("LimitRanger did not add a memory request: %v", live.Spec.Containers[0].Resources)
			}
			out := f.ensure(t, c, pod(ns, "app"))
			if out.Operation != drift.OperationUpdated || len(counter.Writes()) != 2 {
				t.Fatalf("dropping a label: %q with %d writes in all, want updated by one write:\n%s", out.Operation, len(counter.Writes()), out.Drift.Report)
			}
			wantPath := "metadata.labels[tier]"
			if f.unstructured {
				wantPath = "metadata.labels.tier"
			}
			if diff := cmp.Diff([]string{wantPath}, out.Drift.Paths); diff != "" {
				t.Errorf("drift paths (-want +got):\n%s", diff)
			}
			for i := range 5 {
				if out := f.ensure(t, c, pod(ns, "app")); out.Operation != drift.OperationUnchanged {
					t.Fatalf("reconcile %d: %q, want unchanged:\n%s", i+1, out.Operation, out.Drift.Report)
				}
			}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "run"}, &live); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"app": "1"}, live.Labels); diff != "" || len(counter.Writes()) != 2 {
				t.Errorf("labels (-want +got):\n%s\n%d writes in all, want 2", diff, len(counter.Writes()))
			}
		})
	}
}

// TestEnsureAndEnsureAppliedOnAFieldAnotherManagerChanged documents the two
// servers' behaviours the package doc compares: a patch (Ensure) takes a
// field back from another manager without a word; an apply (EnsureApplied)
// is refused with a Conflict naming the other manager, unless
// ForceOwnership.
func TestEnsureAndEnsureAppliedOnAFieldAnotherManagerChanged(t *testing.T) {
	for _, apply := range []bool{false, true} {
		t.Run(map[bool]string{false: "Ensure", true: "EnsureApplied"}[apply], func(t *testing.T) {
			c := env.Client(t)
			ns := env.Namespace(t)
			ensure := func(opts ...drift.Option) error {
				var err error
				if apply {
					_, err = drift.NewWriter(c, testOwner).EnsureApplied(t.Context(), configMapIn(ns), opts...)
				} else {
					_, err = drift.NewWriter(c, testOwner).Ensure(t.Context(), configMapIn(ns), opts...)
				}
				return err
			}
			if err := ensure(); err != nil {
				t.Fatal(err)
			}
			asOther(t, c, configMapIn(ns), func(o client.Object) { o.(*corev1.ConfigMap).Data["mode"] = "theirs" })
			err := ensure()
			if apply {
				if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"other"`) {
					t.Fatalf("EnsureApplied over another manager's field: %v, want a Conflict naming it", err)
				}
				err = ensure(drift.ForceOwnership())
			}
			if err != nil {
				t.Fatal(err)
			}
			var live corev1.ConfigMap
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, &live); err != nil {
				t.Fatal(err)
			}
			if live.Data["mode"] != "prod" {
				t.Errorf("mode = %q, want prod back", live.Data["mode"])
			}
		})
	}
}

// TestEnsureNeverRemovesOnePortOfTwoWithOneNumber: a strategic merge patch
// deletes list elements by their merge key only, so deleting 53/UDP would
// delete 53/TCP too. Ensure keeps such an element (EnsureApplied, whose
// apply keys ports by number and protocol, removes it).
func TestEnsureNeverRemovesOnePortOfTwoWithOneNumber(t *testing.T) {
	for _, f := range []form{forms[0], forms[2]} {
		t.Run(f.name, func(t *testing.T) {
			c := env.Client(t)
			ns := env.Namespace(t)
			f.ensure(t, c, dnsDeploymentIn(ns))
			tcpOnly := dnsDeploymentIn(ns).(*appsv1.Deployment)
			webContainer(tcpOnly).Ports = webContainer(tcpOnly).Ports[1:]
			f.ensure(t, c, tcpOnly)
			var live appsv1.Deployment
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(tcpOnly), &live); err != nil {
				t.Fatal(err)
			}
			want := []string{"dns-tcp", "dns"}
			if f.apply {
				want = want[:1]
			}
			got := names(webContainer(&live).Ports, func(p corev1.ContainerPort) string { return p.Name })
			slices.Reverse(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

// unstructuredOf is obj's unstructured form with its kind set.
func unstructuredOf(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	u := toUnstructured(t, obj)
	u.SetGroupVersionKind(gvk)
	return u
}
