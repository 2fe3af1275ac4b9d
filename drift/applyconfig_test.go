package drift_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// webDeploymentAC is webDeployment as a generated apply configuration, with
// env, one label and one annotation, in ns.
func webDeploymentAC(ns string, env ...*corev1ac.EnvVarApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "web"}
	return appsv1ac.Deployment("web", ns).
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().
						WithName("web").
						WithImage("nginx:1.25").
						WithArgs("-g", "daemon off;").
						WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080)).
						WithEnv(env...).
						WithResources(corev1ac.ResourceRequirements().WithLimits(corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("1024Mi"),
						})),
					corev1ac.Container().
						WithName("sidecar").
						WithImage("busybox:1.36").
						WithPorts(corev1ac.ContainerPort().WithContainerPort(9090)),
				))))
}

func envVar(name, value string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValue(value)
}

func TestEnsureApplyConfigurationConvergedWritesNothing(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	writer := drift.NewWriter(c, testOwner)
	out, err := writer.EnsureApplyConfiguration(ctx, webDeploymentAC(ns, envVar("MODE", "prod")))
	if err != nil || out.Operation != drift.OperationCreated || w.applies != 1 || w.total() != 1 {
		t.Fatalf("first: %q, %v, %d applies of %d writes; want created by one apply", out.Operation, err, w.applies, w.total())
	}
	// The server defaulted a dozen fields (imagePullPolicy, protocol,
	// strategy, ...): converged all the same.
	for i := range 3 {
		w.reset()
		out, err = writer.EnsureApplyConfiguration(ctx, webDeploymentAC(ns, envVar("MODE", "prod")))
		if err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
			t.Fatalf("converged call %d: %q, %v, %d writes; want unchanged and no request\n%s", i, out.Operation, err, w.total(), out.Drift.Report)
		}
	}
	ac := webDeploymentAC(ns, envVar("MODE", "prod"))
	ac.Spec.Template.Spec.Containers[0].WithImage("nginx:1.26")
	out, err = writer.EnsureApplyConfiguration(ctx, ac)
	if err != nil || out.Operation != drift.OperationUpdated || w.applies != 1 || w.total() != 1 {
		t.Fatalf("changed image: %q, %v, %d applies of %d writes; want updated by one apply", out.Operation, err, w.applies, w.total())
	}
	if diff := cmp.Diff([]string{"spec.template.spec.containers[name=web].image"}, out.Drift.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &live); err != nil {
		t.Fatal(err)
	}
	if got := webContainer(&live).Image; got != "nginx:1.26" {
		t.Errorf("image = %q, want nginx:1.26", got)
	}
	if ac.Status != nil || ac.ResourceVersion != nil {
		t.Errorf("the apply configuration was changed: status %v, resourceVersion %v; want it only read", ac.Status, ac.ResourceVersion)
	}
}

func TestEnsureApplyConfigurationRemovesWhatItNoLongerSets(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	writer := drift.NewWriter(c, testOwner)
	with := webDeploymentAC(ns, envVar("MODE", "prod"), envVar("LOG", "info")).WithAnnotations(map[string]string{"team": "web"})
	if _, err := writer.EnsureApplyConfiguration(ctx, with); err != nil {
		t.Fatal(err)
	}
	// Another manager's annotation stays: it is not ours to remove.
	asOther(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, func(o client.Object) {
		o.SetAnnotations(map[string]string{"team": "web", "theirs": "1"})
	})
	w.reset()
	out, err := writer.EnsureApplyConfiguration(ctx, webDeploymentAC(ns, envVar("MODE", "prod")))
	if err != nil || out.Operation != drift.OperationUpdated || w.applies != 1 || w.total() != 1 {
		t.Fatalf("without LOG and the annotation: %q, %v, %d applies of %d writes; want updated by one apply", out.Operation, err, w.applies, w.total())
	}
	want := []string{"metadata.annotations.team", "spec.template.spec.containers[name=web].env[name=LOG]"}
	if diff := cmp.Diff(want, out.Drift.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &live); err != nil {
		t.Fatal(err)
	}
	gotEnv := names(webContainer(&live).Env, func(e corev1.EnvVar) string { return e.Name })
	if diff := cmp.Diff([]string{"MODE"}, gotEnv); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"theirs": "1"}, live.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	w.reset()
	if out, err := writer.EnsureApplyConfiguration(ctx, webDeploymentAC(ns, envVar("MODE", "prod"))); err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("again: %q, %v, %d writes; want unchanged and no request\n%s", out.Operation, err, w.total(), out.Drift.Report)
	}
}

// TestSSAZeroValueTrap shows the trap of server-side apply with plain Go
// structs and its absence with apply configurations. A Service port that
// sets no targetPort is, as a corev1.ServicePort, a targetPort of 0 (an
// IntOrString has no "unset"): EnsureApplied sends it and the field owner
// claims it. Once another manager sets targetPort, every apply of the plain
// struct conflicts with it, or with ForceOwnership takes its value away.
// The same port as an apply configuration sends no targetPort, claims none,
// and leaves the other manager's value alone.
func TestSSAZeroValueTrap(t *testing.T) {
	plain := func(ns string, labels map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
			},
		}
	}
	typed := func(ns string, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service("web", ns).WithLabels(labels).WithSpec(corev1ac.ServiceSpec().
			WithSelector(map[string]string{"app": "web"}).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80)))
	}
	for _, tc := range []struct {
		name  string
		apply func(t *testing.T, c client.Client, ns string, labels map[string]string, opts ...drift.Option) error
		// the trap: targetPort claimed by our apply, the other manager's
		// value refused, and overwritten by force
		trap bool
	}{
		{name: "plain struct", trap: true, apply: func(t *testing.T, c client.Client, ns string, labels map[string]string, opts ...drift.Option) error {
			_, err := drift.NewWriter(c, testOwner).EnsureApplied(t.Context(), plain(ns, labels), opts...)
			return err
		}},
		{name: "apply configuration", apply: func(t *testing.T, c client.Client, ns string, labels map[string]string, opts ...drift.Option) error {
			_, err := drift.NewWriter(c, testOwner).EnsureApplyConfiguration(t.Context(), typed(ns, labels), opts...)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := env.Client(t)
			ns := env.Namespace(t)
			ctx := t.Context()
			if err := tc.apply(t, c, ns, map[string]string{"v": "1"}); err != nil {
				t.Fatal(err)
			}
			var live corev1.Service
			key := client.ObjectKey{Namespace: ns, Name: "web"}
			if err := c.Get(ctx, key, &live); err != nil {
				t.Fatal(err)
			}
			if claimed := ownsField(t, &live, testOwner, `"f:targetPort"`); claimed != tc.trap {
				t.Errorf("our apply claims spec.ports[http].targetPort: %v, want %v", claimed, tc.trap)
			}
			// The application team points the port at 8080 (any manager
			// but ours; an apply of theirs would conflict with a claim).
			asOther(t, c, &live, func(o client.Object) {
				o.(*corev1.Service).Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
			})
			// Our next apply, for a label.
			err := tc.apply(t, c, ns, map[string]string{"v": "2"})
			if tc.trap {
				if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"other"`) {
					t.Fatalf("apply of the plain struct: %v, want a Conflict over targetPort naming the other manager", err)
				}
				err = tc.apply(t, c, ns, map[string]string{"v": "2"}, drift.ForceOwnership())
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, key, &live); err != nil {
				t.Fatal(err)
			}
			want := int32(8080)
			if tc.trap {
				want = 80 // sent as 0 and defaulted to the port: 8080 is lost
			}
			if got := live.Spec.Ports[0].TargetPort.IntVal; got != want || live.Labels["v"] != "2" {
				t.Errorf("targetPort = %d, label v = %q; want %d and 2", got, live.Labels["v"], want)
			}
		})
	}
}

// ownsField reports whether manager's Apply entry in obj's managedFields
// mentions field (a quoted "f:name").
func ownsField(t *testing.T, obj client.Object, manager, field string) bool {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil {
			return strings.Contains(string(e.FieldsV1.Raw), field)
		}
	}
	t.Fatalf("%s has no Apply entry of %s: %v", obj.GetName(), manager, obj.GetManagedFields())
	return false
}

// TestEnsureApplyConfigurationOfACustomResource applies a Widget as an
// unstructured apply configuration (client.ApplyConfigurationFromUnstructured),
// owned by another Widget, and reads it into the scheme's Go type.
func TestEnsureApplyConfigurationOfACustomResource(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	desired := func(items ...any) runtime.ApplyConfiguration {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": testapi.GroupVersion.String(), "kind": "Widget",
			"metadata": map[string]any{"namespace": ns, "name": "child"},
			// An explicit zero: sent, compared and claimed, as asked.
			"spec": map[string]any{"replicas": int64(0), "items": items},
		}}
		return client.ApplyConfigurationFromUnstructured(u)
	}
	writer := drift.NewWriter(c, testOwner)
	w.reset()
	if out, err := writer.EnsureApplyConfiguration(ctx, desired("a", "b"), drift.Owner(owner)); err != nil || out.Operation != drift.OperationCreated || w.total() != 1 {
		t.Fatalf("first: %q, %v, %d writes; want created by one apply", out.Operation, err, w.total())
	}
	w.reset()
	if out, err := writer.EnsureApplyConfiguration(ctx, desired("a", "b"), drift.Owner(owner)); err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("again: %q, %v, %d writes; want unchanged\n%s", out.Operation, err, w.total(), out.Drift.Report)
	}
	var live testapi.Widget
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "child"}, &live); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&live); ref == nil || ref.UID != owner.UID {
		t.Errorf("controller = %v, want the owner %s", ref, owner.UID)
	}
	// replicas defaults to 1 on the server: the explicit 0 is what it holds.
	if live.Spec.Replicas == nil || *live.Spec.Replicas != 0 || !slices.Equal(live.Spec.Items, []string{"a", "b"}) {
		t.Errorf("spec = %+v, want replicas 0 and items [a b]", live.Spec)
	}
}

func TestEnsureApplyConfigurationRejectsWhatItCannotApply(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	noName := appsv1ac.Deployment("", "ns")
	noKind := &appsv1ac.DeploymentApplyConfiguration{}
	noKind.WithName("web")
	for _, tc := range []struct {
		name string
		ac   runtime.ApplyConfiguration
		want string
	}{
		{"nil", nil, "nil"},
		{"nil pointer", (*appsv1ac.DeploymentApplyConfiguration)(nil), "nil"},
		{"no name", noName, "no name"},
		{"no kind", noKind, "no apiVersion or no kind"},
		{"empty unstructured", client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{}), "no apiVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := drift.NewWriter(c, testOwner).EnsureApplyConfiguration(t.Context(), tc.ac)
			if class, _ := errors.Classify(err); !errors.Is(err, drift.ErrInvalidApplyConfiguration) || class != errors.ClassPermanent || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (class %v), want ErrInvalidApplyConfiguration, permanent, saying %q", err, class, tc.want)
			}
			if out.Operation != "" {
				t.Errorf("outcome = %+v, want none", out)
			}
		})
	}
	t.Run("no field owner", func(t *testing.T) {
		_, err := drift.NewWriter(c, "").EnsureApplyConfiguration(t.Context(), appsv1ac.Deployment("web", "ns"))
		if class, _ := errors.Classify(err); !errors.Is(err, errors.ErrNoFieldOwner) || class != errors.ClassPermanent {
			t.Errorf("err = %v, want ErrNoFieldOwner, permanent", err)
		}
	})
}
