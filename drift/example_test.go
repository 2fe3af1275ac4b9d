package drift_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/compare"
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

// Ensure creates what is missing, writes nothing when nothing drifted, and
// patches only the drifted fields otherwise.
func ExampleWriter_Ensure() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()

	w := drift.NewWriter(c, "web-controller")
	for _, image := range []string{"nginx:1.25", "nginx:1.25", "nginx:1.26"} {
		out, err := w.Ensure(ctx, exampleDeployment(image))
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

// EnsureApplyConfiguration applies a generated apply configuration only
// when the object is missing or has drifted; it sends exactly the fields the
// configuration sets, so no zero value of a field left alone is sent and
// claimed.
func ExampleWriter_EnsureApplyConfiguration() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()

	w := drift.NewWriter(c, "web-controller")
	for _, image := range []string{"nginx:1.25", "nginx:1.25", "nginx:1.26"} {
		labels := map[string]string{"app": "web"}
		dep := appsv1ac.Deployment("web", "default").
			WithSpec(appsv1ac.DeploymentSpec().
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(corev1ac.PodTemplateSpec().
					WithLabels(labels).
					WithSpec(corev1ac.PodSpec().WithContainers(
						corev1ac.Container().WithName("web").WithImage(image)))))
		out, err := w.EnsureApplyConfiguration(ctx, dep)
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
func ExampleWriter_EnsureMutate() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	w := drift.NewWriter(c, "settings-controller")

	for range 2 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
		out, err := w.EnsureMutate(ctx, cm, func() error {
			cm.Data = map[string]string{"mode": "prod"}
			return nil
		})
		fmt.Println(out.Operation, err)
	}
	// Output:
	// created <nil>
	// unchanged <nil>
}

// A HotLoopDetector, set as a Writer's HotLoops, stops Ensure from fighting
// another writer that keeps reverting a field, and says so in a Warning
// event. The write it holds back is reported as unchanged, with the drift
// it did not write.
func ExampleHotLoopDetector() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	recorder := events.NewFakeRecorder(1)
	w := drift.NewWriter(c, "settings-controller")
	w.HotLoops = &drift.HotLoopDetector{Threshold: 3, Window: time.Minute, Recorder: recorder}
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
			Data:       map[string]string{"mode": "prod"},
		}
	}
	if _, err := w.Ensure(ctx, desired()); err != nil {
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
		out, err := w.Ensure(ctx, desired())
		fmt.Println(out.Operation, out.Drift.Paths, errors.Is(err, drift.ErrHotLoop))
	}
	fmt.Println(<-recorder.Events)
	// Output:
	// updated [data[mode]] false
	// updated [data[mode]] false
	// unchanged [data[mode]] true
	// Warning HotLoop data[mode] drifted back 3 times within 1m0s: another controller or a mutating webhook reverts them; not patching for 5m0s
}

// The field owner is required: it names the operator in every write, and so
// in the object's managedFields, where "fields we wrote before" are read
// back. A Writer built with an empty one sends nothing and returns a
// permanent error; Validate says so at setup.
func ExampleNewWriter() {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithReturnManagedFields().Build()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "prod"},
	}

	unnamed := drift.NewWriter(c, "")
	_, err := unnamed.Ensure(ctx, cm)
	class, _ := rkerrors.Classify(err)
	fmt.Println(errors.Is(err, rkerrors.ErrNoFieldOwner), class, errors.Is(unnamed.Validate(), rkerrors.ErrNoFieldOwner))

	out, err := drift.NewWriter(c, "settings-controller").Ensure(ctx, cm)
	fmt.Println(out.Operation, err)
	for _, mf := range cm.ManagedFields {
		fmt.Println(mf.Manager, mf.Operation)
	}
	// Output:
	// true permanent true
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

	out, err := drift.NewWriter(c, "memcached-operator").Ensure(ctx, deployment(11212),
		drift.Owner(owner), drift.Replaces("manager"))
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

// CompareOptions passes options of package compare to a Writer's
// comparison: with compare.Own, the ConfigMap's data is desired's alone, and
// a key someone else added is drift the patch removes.
func ExampleCompareOptions() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	live := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "prod", "debug": "true"},
	}
	if err := c.Create(ctx, live); err != nil {
		fmt.Println(err)
		return
	}

	desired := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "prod"},
	}
	out, err := drift.NewWriter(c, "settings-controller").Ensure(ctx, desired,
		drift.CompareOptions(compare.Own("data")))
	fmt.Println(out.Operation, out.Drift.Paths, desired.Data, err)
	// Output:
	// updated [data[debug]] map[mode:prod] <nil>
}

// A Writer leaves alone an object somebody else created under the name it
// writes: the call returns a permanent *drift.ForeignError naming it. Adopt
// opts in to taking over an object no owner controls.
func ExampleAdopt() {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithReturnManagedFields().Build()
	theirs := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db-credentials"},
		Data:       map[string][]byte{"password": []byte("theirs")},
	}
	if err := c.Create(ctx, theirs, client.FieldOwner("kubectl-create")); err != nil {
		fmt.Println(err)
		return
	}
	desired := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db-credentials"},
			Data:       map[string][]byte{"password": []byte("mirrored")},
		}
	}

	w := drift.NewWriter(c, "mirror-controller")
	_, err := w.Ensure(ctx, desired())
	var foreign *drift.ForeignError
	class, _ := rkerrors.Classify(err)
	fmt.Println(errors.As(err, &foreign), foreign.Object, class, rkerrors.Reason(err))

	out, err := w.Ensure(ctx, desired(), drift.Adopt())
	fmt.Println(out.Operation, err)
	// Once written, it is ours: no Adopt needed.
	out, err = w.Ensure(ctx, desired())
	fmt.Println(out.Operation, err)
	// Output:
	// true team-b/db-credentials permanent ForeignObject
	// updated <nil>
	// unchanged <nil>
}
