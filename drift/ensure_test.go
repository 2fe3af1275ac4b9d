package drift_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

func deploymentIn(ns string) client.Object {
	d := webDeployment()
	d.Namespace = ns
	return d
}

func serviceIn(ns string) client.Object {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "metrics", Port: 9090},
			},
		},
	}
}

func configMapIn(ns string) client.Object {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"},
		Data:       map[string]string{"mode": "prod", "empty": ""},
	}
}

func widgetIn(ns string) client.Object {
	return &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"},
		Spec:       testapi.WidgetSpec{Message: "hello", Labels: map[string]string{"a": "1"}},
	}
}

// dnsDeploymentIn serves one port number over UDP and TCP, as DNS does:
// Kubernetes keys container ports by number and protocol.
func dnsDeploymentIn(ns string) client.Object {
	d := webDeployment()
	d.Namespace, d.Name = ns, "dns"
	d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
		{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
	}
	return d
}

// tolerantPodIn has one toleration; the DefaultTolerationSeconds admission
// plugin adds two more to the unkeyed list.
func tolerantPodIn(ns string) client.Object {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tolerant"},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		},
	}
}

var objectKinds = []struct {
	name  string
	build func(ns string) client.Object
}{
	{"Deployment", deploymentIn},
	{"Deployment with one port over UDP and TCP", dnsDeploymentIn},
	{"Pod with tolerations the server extends", tolerantPodIn},
	{"Service", serviceIn},
	{"ConfigMap", configMapIn},
	{"Widget", widgetIn},
}

func TestEnsureCreatesThenMakesNoWritesDespiteServerDefaults(t *testing.T) {
	for _, kind := range objectKinds {
		t.Run(kind.name, func(t *testing.T) {
			c, w := countingClient(t)
			ns := env.Namespace(t)
			ctx := t.Context()

			out, err := drift.NewWriter(c, testOwner).Ensure(ctx, kind.build(ns))
			if err != nil {
				t.Fatalf("first Ensure: %v", err)
			}
			if out.Operation != drift.OperationCreated || w.creates != 1 || w.total() != 1 {
				t.Fatalf("first Ensure: operation %q with %d creates, %d writes; want created with exactly 1 create", out.Operation, w.creates, w.total())
			}
			w.reset()
			for i := range 2 {
				out, err = drift.NewWriter(c, testOwner).Ensure(ctx, kind.build(ns))
				if err != nil {
					t.Fatalf("Ensure #%d: %v", i+2, err)
				}
				if out.Operation != drift.OperationUnchanged || w.total() != 0 {
					t.Fatalf("Ensure #%d: operation %q with %d writes, want unchanged with 0 writes; drift:\n%s", i+2, out.Operation, w.total(), out.Drift.Report)
				}
			}
		})
	}
}

func TestEnsureLeavesDesiredHoldingTheLiveObject(t *testing.T) {
	c, _ := countingClient(t)
	ns := env.Namespace(t)
	w := widgetIn(ns).(*testapi.Widget)
	if _, err := drift.NewWriter(c, testOwner).Ensure(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if w.UID == "" || w.ResourceVersion == "" || w.Spec.Replicas == nil || *w.Spec.Replicas != 1 {
		t.Errorf("after create: uid=%q rv=%q replicas=%v; want the server's object with replicas defaulted to 1", w.UID, w.ResourceVersion, w.Spec.Replicas)
	}
	again := widgetIn(ns).(*testapi.Widget)
	if _, err := drift.NewWriter(c, testOwner).Ensure(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	if again.UID != w.UID || again.ResourceVersion != w.ResourceVersion {
		t.Errorf("after unchanged: uid=%q rv=%q, want the live %q %q", again.UID, again.ResourceVersion, w.UID, w.ResourceVersion)
	}
}

func TestEnsureChangedImageSendsOnePatchTouchingOnlyThatField(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, deploymentIn(ns)); err != nil {
		t.Fatal(err)
	}
	w.reset()

	desired := deploymentIn(ns).(*appsv1.Deployment)
	desired.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	out, err := drift.NewWriter(c, testOwner).Ensure(ctx, desired)
	if err != nil {
		t.Fatal(err)
	}
	if out.Operation != drift.OperationUpdated {
		t.Errorf("operation = %q, want updated", out.Operation)
	}
	if diff := cmp.Diff([]string{"spec.template.spec.containers[name=web].image"}, out.Drift.Paths); diff != "" {
		t.Errorf("drift paths (-want +got):\n%s", diff)
	}
	if w.patches != 1 || w.total() != 1 {
		t.Fatalf("%d patches, %d writes; want exactly 1 patch", w.patches, w.total())
	}
	want := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "web", "image": "nginx:1.26"}},
	}}}}
	if diff := cmp.Diff(want, withoutDirectives(w.bodies[0])); diff != "" {
		t.Errorf("patch body (-want +got):\n%s\nfull body: %v", diff, w.bodies[0])
	}

	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(desired), &live); err != nil {
		t.Fatal(err)
	}
	cs := live.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Image != "nginx:1.26" || cs[1].Image != "busybox:1.36" || cs[0].ImagePullPolicy == "" {
		t.Errorf("live containers after patch: %+v", cs)
	}
}

func TestEnsureCustomResourceDriftIsAJSONMergePatchOfTheField(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, widgetIn(ns)); err != nil {
		t.Fatal(err)
	}
	w.reset()
	desired := widgetIn(ns).(*testapi.Widget)
	desired.Spec.Message = "bye"
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, desired); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec": map[string]any{"message": "bye"}}
	if w.patches != 1 {
		t.Fatalf("%d patches, want 1", w.patches)
	}
	if diff := cmp.Diff(want, w.bodies[0]); diff != "" {
		t.Errorf("patch body (-want +got):\n%s", diff)
	}
}

func TestEnsureLeavesFieldsOthersSetAlone(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, deploymentIn(ns)); err != nil {
		t.Fatal(err)
	}
	// Someone else sets fields desired does not set.
	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &live); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()
	live.Spec.MinReadySeconds = 7
	live.Annotations = map[string]string{"other": "writer"}
	live.Labels["team"] = "other"
	live.Spec.Template.Spec.Containers[0].Env = append(live.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "INJECTED", Value: "1"})
	if err := c.Patch(ctx, &live, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	w.reset()

	out, err := drift.NewWriter(c, testOwner).Ensure(ctx, deploymentIn(ns))
	if err != nil {
		t.Fatal(err)
	}
	if out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("operation %q with %d writes; want unchanged and none:\n%s", out.Operation, w.total(), out.Drift.Report)
	}
	// Now a real drift: the patch must still keep the other writer's fields.
	desired := deploymentIn(ns).(*appsv1.Deployment)
	desired.Spec.Template.Spec.Containers[0].Env[0].Value = "staging"
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, desired); err != nil {
		t.Fatal(err)
	}
	var after appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &after); err != nil {
		t.Fatal(err)
	}
	env0 := after.Spec.Template.Spec.Containers[0].Env
	if after.Spec.MinReadySeconds != 7 || after.Annotations["other"] != "writer" || after.Labels["team"] != "other" ||
		len(env0) != 3 || env0[0].Value != "staging" || env0[2].Name != "INJECTED" {
		t.Errorf("after patch: minReadySeconds=%d annotations=%v labels=%v env=%v; want the other writer's fields kept and MODE=staging",
			after.Spec.MinReadySeconds, after.Annotations, after.Labels, env0)
	}
}

func TestEnsureOwnedMapRemovesForeignKeys(t *testing.T) {
	c, _ := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, configMapIn(ns)); err != nil {
		t.Fatal(err)
	}
	var live corev1.ConfigMap
	key := client.ObjectKey{Namespace: ns, Name: "web-config"}
	if err := c.Get(ctx, key, &live); err != nil {
		t.Fatal(err)
	}
	live.Data["foreign"] = "x"
	if err := c.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	out, err := drift.NewWriter(c, testOwner).Ensure(ctx, configMapIn(ns), drift.CompareOptions(compare.Own("data")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"data[foreign]"}, out.Drift.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if err := c.Get(ctx, key, &live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"mode": "prod", "empty": ""}, live.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

func TestEnsureUnstructured(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	build := func(image string) *unstructured.Unstructured {
		u := toUnstructured(t, deploymentIn(ns))
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if out, err := drift.NewWriter(c, testOwner).Ensure(ctx, build("nginx:1.25")); err != nil || out.Operation != drift.OperationCreated {
		t.Fatalf("first Ensure: %v, %v", out.Operation, err)
	}
	w.reset()
	if out, err := drift.NewWriter(c, testOwner).Ensure(ctx, build("nginx:1.25")); err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("second Ensure: %q, %v, %d writes; want unchanged with none\n%s", out.Operation, err, w.total(), out.Drift.Report)
	}
	out, err := drift.NewWriter(c, testOwner).Ensure(ctx, build("nginx:1.26"))
	if err != nil || out.Operation != drift.OperationUpdated || w.patches != 1 {
		t.Fatalf("third Ensure: %q, %v, %d patches; want updated with one patch", out.Operation, err, w.patches)
	}
	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &live); err != nil {
		t.Fatal(err)
	}
	if img := live.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" || len(live.Spec.Template.Spec.Containers) != 2 {
		t.Errorf("live image %q, %d containers; want nginx:1.26 and 2", img, len(live.Spec.Template.Spec.Containers))
	}
}

func TestEnsureMutateWritesOnlyOnDrift(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	image := "nginx:1.25"
	// A typical CreateOrUpdate mutate function: it replaces the container
	// list with undefaulted containers, which CreateOrUpdate would write
	// on every call.
	ensure := func() (drift.Outcome, error) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		return drift.NewWriter(c, testOwner).EnsureMutate(ctx, d, func() error {
			want := deploymentIn(ns).(*appsv1.Deployment)
			want.Spec.Template.Spec.Containers[0].Image = image
			d.Labels = want.Labels
			d.Spec.Replicas = want.Spec.Replicas
			d.Spec.Selector = want.Spec.Selector
			d.Spec.Template = want.Spec.Template
			return nil
		})
	}
	if out, err := ensure(); err != nil || out.Operation != drift.OperationCreated {
		t.Fatalf("first: %q, %v", out.Operation, err)
	}
	w.reset()
	if out, err := ensure(); err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("second: %q, %v, %d writes; want unchanged, none\n%s", out.Operation, err, w.total(), out.Drift.Report)
	}
	image = "nginx:1.26"
	out, err := ensure()
	if err != nil || out.Operation != drift.OperationUpdated || w.patches != 1 {
		t.Fatalf("third: %q, %v, %d patches; want updated, 1 patch", out.Operation, err, w.patches)
	}
	if diff := cmp.Diff([]string{"spec.template.spec.containers[name=web].image"}, out.Drift.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

func TestEnsureMutateRejectsAChangedKey(t *testing.T) {
	c, _ := countingClient(t)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
	_, err := drift.NewWriter(c, testOwner).EnsureMutate(t.Context(), cm, func() error { cm.Name = "b"; return nil })
	if err == nil || !strings.Contains(err.Error(), "object key") {
		t.Errorf("err = %v, want an error about the changed key", err)
	}
}

func TestEnsureAppliedSkipsTheRequestWithoutDrift(t *testing.T) {
	for _, kind := range objectKinds {
		t.Run(kind.name, func(t *testing.T) {
			c, w := countingClient(t)
			ns := env.Namespace(t)
			ctx := t.Context()
			opts := []drift.Option{drift.ForceOwnership()}
			out, err := drift.NewWriter(c, testOwner).EnsureApplied(ctx, kind.build(ns), opts...)
			if err != nil || out.Operation != drift.OperationCreated || w.applies != 1 {
				t.Fatalf("first: %q, %v, %d applies; want created by one apply", out.Operation, err, w.applies)
			}
			w.reset()
			out, err = drift.NewWriter(c, testOwner).EnsureApplied(ctx, kind.build(ns), opts...)
			if err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
				t.Fatalf("second: %q, %v, %d writes; want unchanged and no request\n%s", out.Operation, err, w.total(), out.Drift.Report)
			}
			desired := kind.build(ns)
			labels := maps.Clone(desired.GetLabels())
			if labels == nil {
				labels = map[string]string{}
			}
			labels["version"] = "2"
			desired.SetLabels(labels)
			out, err = drift.NewWriter(c, testOwner).EnsureApplied(ctx, desired, opts...)
			if err != nil || out.Operation != drift.OperationUpdated || w.applies != 1 {
				t.Fatalf("third: %q, %v, %d applies; want updated by one apply", out.Operation, err, w.applies)
			}
			if desired.GetLabels()["version"] != "2" || desired.GetResourceVersion() == "" {
				t.Errorf("desired after apply: labels %v rv %q; want the server's object", desired.GetLabels(), desired.GetResourceVersion())
			}
		})
	}
}

func TestEnsureOwnerSetsControllerReference(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	owner := widgetIn(ns)
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// An object somebody else created without the reference is not ours:
	// refused, until the call adopts it, which patches the reference in.
	if err := c.Create(ctx, configMapIn(ns), client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	w.reset()
	var foreign *drift.ForeignError
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, configMapIn(ns), drift.Owner(owner)); !errors.As(err, &foreign) || w.total() != 0 {
		t.Fatalf("Ensure with owner onto somebody else's object: %v, %d writes; want a *drift.ForeignError and none", err, w.total())
	}
	out, err := drift.NewWriter(c, testOwner).Ensure(ctx, configMapIn(ns), drift.Owner(owner), drift.Adopt())
	if err != nil || out.Operation != drift.OperationUpdated || w.patches != 1 {
		t.Fatalf("Ensure with owner, adopting: %q, %v, %d patches; want updated", out.Operation, err, w.patches)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&cm); ref == nil || ref.UID != owner.GetUID() {
		t.Fatalf("controller of the config map = %v, want the widget %s", ref, owner.GetUID())
	}
	w.reset()
	if out, err := drift.NewWriter(c, testOwner).Ensure(ctx, configMapIn(ns), drift.Owner(owner)); err != nil || out.Operation != drift.OperationUnchanged || w.total() != 0 {
		t.Fatalf("again: %q, %v, %d writes; want unchanged", out.Operation, err, w.total())
	}
	// A new object is created with the reference.
	svc := serviceIn(ns)
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, svc, drift.Owner(owner)); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != owner.GetUID() {
		t.Errorf("controller of the created service = %v, want the widget", ref)
	}
}

func TestEnsureOptimisticLockFailsOnAConcurrentWrite(t *testing.T) {
	c, _ := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, widgetIn(ns)); err != nil {
		t.Fatal(err)
	}
	// Another writer sneaks in between Ensure's read and its patch.
	racy := &racingClient{Client: c, race: func() {
		var w testapi.Widget
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, &w); err != nil {
			t.Error(err)
			return
		}
		w.Spec.Labels = map[string]string{"b": "2"}
		if err := c.Update(ctx, &w); err != nil {
			t.Error(err)
		}
	}}
	desired := widgetIn(ns).(*testapi.Widget)
	desired.Spec.Message = "changed"
	_, err := drift.NewWriter(racy, testOwner).Ensure(ctx, desired, drift.OptimisticLock())
	if !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want a Conflict", err)
	}
}

// racingClient runs race once just before the first patch.
type racingClient struct {
	client.Client
	race func()
}

func (r *racingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if r.race != nil {
		r.race()
		r.race = nil
	}
	return r.Client.Patch(ctx, obj, patch, opts...)
}

func TestEnsureStopsAHotLoopAndRecordsAnEvent(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := events.NewFakeRecorder(10)
	// The Writer's clock reaches its detector, which has none of its own.
	writer := drift.NewWriter(c, testOwner)
	writer.Clock = clk
	writer.HotLoops = &drift.HotLoopDetector{Threshold: 3, Window: time.Minute, HoldOff: 10 * time.Minute, Recorder: rec}

	// The other writer: a webhook-like actor that reverts spec.message.
	revert := func() {
		var live testapi.Widget
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, &live); err != nil {
			t.Fatal(err)
		}
		before := live.DeepCopy()
		live.Spec.Message = "webhook says no"
		if err := c.Patch(ctx, &live, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writer.Ensure(ctx, widgetIn(ns)); err != nil {
		t.Fatal(err)
	}
	var ours int
	for i := range 6 {
		revert()
		clk.SetTime(clk.Now().Add(5 * time.Second))
		w.reset()
		out, err := writer.Ensure(ctx, widgetIn(ns))
		switch {
		case i < 2:
			if err != nil || out.Operation != drift.OperationUpdated {
				t.Fatalf("round %d: %q, %v; want updated: not yet a loop", i, out.Operation, err)
			}
			ours += w.patches
		default:
			var hl *drift.HotLoopError
			if !errors.As(err, &hl) || !errors.Is(err, drift.ErrHotLoop) {
				t.Fatalf("round %d: err = %v, want a *HotLoopError", i, err)
			}
			if out.Operation != drift.OperationUnchanged || w.patches != 0 {
				t.Fatalf("round %d: %q with %d patches; want unchanged and no patch", i, out.Operation, w.patches)
			}
			if diff := cmp.Diff([]string{"spec.message"}, hl.Paths); diff != "" {
				t.Errorf("hot loop paths (-want +got):\n%s", diff)
			}
			// Unchanged, and yet the drift it held back: not Equal.
			if out.Drift.Equal || !slices.Equal(out.Drift.Paths, hl.Paths) {
				t.Errorf("round %d: Outcome.Drift = %+v; want the held-back drift, not equal", i, out.Drift)
			}
		}
	}
	if ours != 2 {
		t.Errorf("%d patches before the loop was noticed, want 2", ours)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning HotLoop") || !strings.Contains(e, "spec.message") {
			t.Errorf("event = %q, want a Warning HotLoop naming spec.message", e)
		}
	default:
		t.Errorf("no event recorded")
	}
	select {
	case e := <-rec.Events:
		t.Errorf("second event %q: want one per trip", e)
	default:
	}
	// After the hold-off Ensure fights again.
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	if out, err := writer.Ensure(ctx, widgetIn(ns)); err != nil || out.Operation != drift.OperationUpdated {
		t.Errorf("after hold-off: %q, %v; want updated", out.Operation, err)
	}
}

func TestEnsureWritesAsTheFieldOwner(t *testing.T) {
	c, _ := countingClient(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	managers := func(o client.Object) []string {
		var out []string
		for _, mf := range o.GetManagedFields() {
			out = append(out, mf.Manager+"/"+string(mf.Operation))
		}
		return out
	}
	cm := configMapIn(ns)
	if _, err := drift.NewWriter(c, "creator").Ensure(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"creator/Update"}, managers(cm)); diff != "" {
		t.Errorf("managers after create (-want +got):\n%s", diff)
	}
	changed := configMapIn(ns).(*corev1.ConfigMap)
	changed.Data["mode"] = "staging"
	// Another operator's object, shared on purpose: the patcher adopts it.
	if _, err := drift.NewWriter(c, "patcher").Ensure(ctx, changed, drift.Adopt()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"creator/Update", "patcher/Update"}, managers(changed)); diff != "" {
		t.Errorf("managers after patch (-want +got):\n%s", diff)
	}
}

// TestEveryEnsureWritesAsItsFieldOwner: every form of Ensure creates and
// patches (or applies) as the Writer's field owner, not as the
// client's default manager, so ownership is recorded from the first write.
func TestEveryEnsureWritesAsItsFieldOwner(t *testing.T) {
	type ensureFunc func(ctx context.Context, c client.Client, cm *corev1.ConfigMap) error
	mutate := func(ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}}
		_, err := drift.NewWriter(c, testOwner).EnsureMutate(ctx, obj, func() error {
			obj.Data = maps.Clone(cm.Data)
			return nil
		})
		return err
	}
	tests := []struct {
		name   string
		ensure ensureFunc
		want   []string
	}{
		{"Ensure", func(ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
			_, err := drift.NewWriter(c, testOwner).Ensure(ctx, cm)
			return err
		}, []string{testOwner + "/Update"}},
		{"EnsureMutate", mutate, []string{testOwner + "/Update"}},
		{"EnsureApplied", func(ctx context.Context, c client.Client, cm *corev1.ConfigMap) error {
			_, err := drift.NewWriter(c, testOwner).EnsureApplied(ctx, cm)
			return err
		}, []string{testOwner + "/Apply"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w := countingClient(t)
			ctx := t.Context()
			ns := env.Namespace(t)
			for _, mode := range []string{"prod", "staging"} { // create, then patch
				cm := configMapIn(ns).(*corev1.ConfigMap)
				cm.Data["mode"] = mode
				if err := tt.ensure(ctx, c, cm); err != nil {
					t.Fatal(err)
				}
				var live corev1.ConfigMap
				if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
					t.Fatal(err)
				}
				var managers []string
				for _, mf := range live.ManagedFields {
					managers = append(managers, mf.Manager+"/"+string(mf.Operation))
				}
				if diff := cmp.Diff(tt.want, managers); diff != "" {
					t.Errorf("managers after mode=%s (-want +got):\n%s", mode, diff)
				}
			}
			if w.total() != 2 {
				t.Errorf("%d writes, want 2 (create, then patch or apply)", w.total())
			}
		})
	}
}

// TestEnsureLocksAJSONMergePatchThatReplacesAList proves that Ensure does not
// drop list elements another writer added after Ensure read the object (a
// JSON merge patch replaces a list whole): the patch carries the
// resourceVersion, the server refuses it, and the other writer's element
// survives for the next attempt to merge with.
func TestEnsureLocksAJSONMergePatchThatReplacesAList(t *testing.T) {
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	ctx := t.Context()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listy"}, Spec: testapi.WidgetSpec{Items: []string{"a"}}}
	if err := direct.Create(ctx, w, client.FieldOwner(testOwner)); err != nil {
		t.Fatal(err)
	}
	stale := w.DeepCopy()

	// Another writer adds "b" after our (cached, now stale) read.
	w.Spec.Items = append(w.Spec.Items, "b")
	if err := direct.Update(ctx, w, client.FieldOwner("another-writer")); err != nil {
		t.Fatal(err)
	}
	cached := interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			stale.DeepCopyInto(obj.(*testapi.Widget))
			return nil
		},
	})

	desired := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listy"}, Spec: testapi.WidgetSpec{Items: []string{"a", "c"}}}
	_, err = drift.NewWriter(cached, testOwner).Ensure(ctx, desired)
	if !apierrors.IsConflict(err) {
		t.Fatalf("Ensure from a stale read = %v, want a Conflict (the list patch must be locked)", err)
	}
	got := &testapi.Widget{}
	if err := direct.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got.Spec.Items); diff != "" {
		t.Errorf("items after the refused patch (-want +got):\n%s", diff)
	}
}
