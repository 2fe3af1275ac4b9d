package drift_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/drift"
)

func exampleDeployment(image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "web", Image: image},
					{Name: "sidecar", Image: "busybox:1.36"},
				}},
			},
		},
	}
}

// Diff ignores what the server defaulted and the order of keyed lists, and
// explains what really drifted.
func ExampleDiff() {
	live := exampleDeployment("nginx:1.25")
	live.ResourceVersion = "42"
	live.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst // server default
	cs := live.Spec.Template.Spec.Containers
	cs[0], cs[1] = cs[1], cs[0] // another order
	for i := range cs {
		cs[i].ImagePullPolicy = corev1.PullIfNotPresent // server default
	}

	same, _ := drift.Diff(exampleDeployment("nginx:1.25"), live)
	fmt.Println("equal:", same.Equal)

	changed, _ := drift.Diff(exampleDeployment("nginx:1.26"), live)
	fmt.Println("equal:", changed.Equal)
	fmt.Println("paths:", changed.Paths)
	fmt.Print(changed.Report)
	// Output:
	// equal: true
	// equal: false
	// paths: [spec.template.spec.containers[name=web].image]
	// spec.template.spec.containers[name=web].image:
	// - "nginx:1.25"
	// + "nginx:1.26"
}

// Unstructured objects have no Go types to declare list keys: lists of
// objects with a "name" match by name, others by a key given with ListKey.
func ExampleDiff_unstructured() {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"ports": []any{
			map[string]any{"port": int64(80), "targetPort": int64(8080)},
		}},
	}}
	live := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"resourceVersion": "7"},
		"spec": map[string]any{"ports": []any{
			map[string]any{"port": int64(443), "targetPort": int64(8443)},
			map[string]any{"port": int64(80), "targetPort": int64(8081), "protocol": "TCP"},
		}},
	}}
	c, err := drift.Diff(desired, live, drift.ListKey("spec.ports", "port"))
	fmt.Println(c.Paths, err)
	// Output:
	// [spec.ports[port=80].targetPort] <nil>
}

// What our field owner wrote before and desired no longer sets is drift:
// the API server recorded in managedFields that reconcilekit set the env var
// LOG (here written down as the server returns it), and desired no longer
// has it. INJECTED belongs to another field manager and is left alone.
func ExampleDiff_fieldsWeWroteBefore() {
	live := exampleDeployment("nginx:1.25")
	live.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG", Value: "debug"}, {Name: "INJECTED", Value: "1"}}
	envEntry := func(name string) string {
		return `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"` + name + `\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`
	}
	live.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: drift.DefaultFieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(envEntry("LOG"))},
		{Manager: "injector", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(envEntry("INJECTED"))},
	}

	c, _ := drift.Diff(exampleDeployment("nginx:1.25"), live)
	fmt.Println(c.Paths)
	fmt.Print(c.Report)
	// Output:
	// [spec.template.spec.containers[name=web].env[name=LOG]]
	// spec.template.spec.containers[name=web].env[name=LOG]:
	// - {"name":"LOG","value":"debug"}
}

// Ensure creates what is missing, writes nothing when nothing drifted, and
// patches only the drifted fields otherwise.
func ExampleEnsure() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()

	for _, image := range []string{"nginx:1.25", "nginx:1.25", "nginx:1.26"} {
		out, err := drift.Ensure(ctx, c, exampleDeployment(image))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(out.Operation, out.Drift.Paths)
	}
	// Output:
	// created []
	// unchanged []
	// updated [spec.template.spec.containers[name=web].image]
}

// EnsureMutate keeps the shape of controllerutil.CreateOrUpdate, but writes
// only when the mutate function changed something the live object lacks.
func ExampleEnsureMutate() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()

	for range 2 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
		out, err := drift.EnsureMutate(ctx, c, cm, func() error {
			cm.Data = map[string]string{"mode": "prod"}
			return nil
		})
		fmt.Println(out.Operation, err)
	}
	// Output:
	// created <nil>
	// unchanged <nil>
}

// A HotLoopDetector stops Ensure from fighting another writer that keeps
// reverting a field, and says so in a Warning event.
func ExampleHotLoopDetector() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	recorder := events.NewFakeRecorder(1)
	detector := &drift.HotLoopDetector{Threshold: 3, Window: time.Minute, Recorder: recorder}
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
			Data:       map[string]string{"mode": "prod"},
		}
	}
	if _, err := drift.Ensure(ctx, c, desired(), drift.DetectHotLoops(detector)); err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		// Another writer reverts the field...
		theirs := desired()
		theirs.Data["mode"] = "debug"
		if err := c.Update(ctx, theirs); err != nil {
			fmt.Println(err)
			return
		}
		// ...and the reconciler puts it back, until it notices the loop.
		out, err := drift.Ensure(ctx, c, desired(), drift.DetectHotLoops(detector))
		fmt.Println(out.Operation, errors.Is(err, drift.ErrHotLoop))
	}
	fmt.Println(<-recorder.Events)
	// Output:
	// updated false
	// updated false
	// unchanged true
	// Warning HotLoop data[mode] drifted back 3 times within 1m0s: another controller or a mutating webhook reverts them; not patching for 5m0s
}
