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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/drift"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
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
// the API server recorded in managedFields that web-controller set the env
// var LOG (here written down as the server returns it), and desired no
// longer has it. INJECTED belongs to another field manager and is left
// alone.
func ExampleDiff_fieldsWeWroteBefore() {
	live := exampleDeployment("nginx:1.25")
	live.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG", Value: "debug"}, {Name: "INJECTED", Value: "1"}}
	envEntry := func(name string) string {
		return `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"` + name + `\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`
	}
	live.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "web-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(envEntry("LOG"))},
		{Manager: "injector", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(envEntry("INJECTED"))},
	}

	c, _ := drift.Diff(exampleDeployment("nginx:1.25"), live, drift.WithFieldOwner("web-controller"))
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
		out, err := drift.Ensure(ctx, c, exampleDeployment(image), drift.WithFieldOwner("web-controller"))
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
		}, drift.WithFieldOwner("settings-controller"))
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
	if _, err := drift.Ensure(ctx, c, desired(), drift.DetectHotLoops(detector), drift.WithFieldOwner("settings-controller")); err != nil {
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
		out, err := drift.Ensure(ctx, c, desired(), drift.DetectHotLoops(detector), drift.WithFieldOwner("settings-controller"))
		fmt.Println(out.Operation, errors.Is(err, drift.ErrHotLoop))
	}
	fmt.Println(<-recorder.Events)
	// Output:
	// updated false
	// updated false
	// unchanged true
	// Warning HotLoop data[mode] drifted back 3 times within 1m0s: another controller or a mutating webhook reverts them; not patching for 5m0s
}

// WithFieldOwner is required: it names the operator in every write, and so
// in the object's managedFields, where "fields we wrote before" are read
// back. Without it Ensure sends nothing and returns a permanent error.
func ExampleWithFieldOwner() {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithReturnManagedFields().Build()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "prod"},
	}

	_, err := drift.Ensure(ctx, c, cm)
	class, _ := rkerrors.Classify(err)
	fmt.Println(errors.Is(err, drift.ErrNoFieldOwner), class)

	out, err := drift.Ensure(ctx, c, cm, drift.WithFieldOwner("settings-controller"))
	fmt.Println(out.Operation, err)
	for _, mf := range cm.ManagedFields {
		fmt.Println(mf.Manager, mf.Operation)
	}
	// Output:
	// true permanent
	// created <nil>
	// settings-controller Update
}

// Replaces adopts the children of the controller an operator replaces. A
// kubebuilder controller (its binary, and so its field manager, is
// "manager") created the Deployment of a Memcached with port 11211; the
// operator ported onto this package serves on 11212 under the same port
// name. Its first write replaces the old port, where a plain patch would
// add the new one beside it (the server refuses the duplicate name), and
// takes the old controller's fields over.
func ExampleReplaces() {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithReturnManagedFields().Build()
	// The owner stands in for the Memcached custom resource.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "memcached", UID: "6b3c"}}
	deployment := func(port int32) *appsv1.Deployment {
		d := exampleDeployment("memcached:1.6")
		d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "memcached", ContainerPort: port}}
		return d
	}
	old := deployment(11211)
	old.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}
	if err := c.Create(ctx, old, client.FieldOwner("manager")); err != nil {
		fmt.Println(err)
		return
	}

	out, err := drift.Ensure(ctx, c, deployment(11212), drift.Owner(owner),
		drift.WithFieldOwner("memcached-operator"), drift.Replaces("manager"))
	fmt.Println(out.Operation, out.Drift.Paths, err)
	live := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), live); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(live.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort, len(live.Spec.Template.Spec.Containers[0].Ports))
	for _, mf := range live.ManagedFields {
		fmt.Println(mf.Manager, mf.Operation)
	}
	// Output:
	// updated [spec.template.spec.containers[name=web].ports[containerPort=11211,protocol=TCP] spec.template.spec.containers[name=web].ports[containerPort=11212]] <nil>
	// 11212 1
	// memcached-operator Update
}
