package compare_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reconcilekit/reconcilekit/compare"
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

	same, _ := compare.Diff(exampleDeployment("nginx:1.25"), live)
	fmt.Println("equal:", same.Equal)

	changed, _ := compare.Diff(exampleDeployment("nginx:1.26"), live)
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
	c, err := compare.Diff(desired, live, compare.ListKey("spec.ports", "port"))
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

	c, _ := compare.Diff(exampleDeployment("nginx:1.25"), live, compare.WithFieldOwner("web-controller"))
	fmt.Println(c.Paths)
	fmt.Print(c.Report)
	// Output:
	// [spec.template.spec.containers[name=web].env[name=LOG]]
	// spec.template.spec.containers[name=web].env[name=LOG]:
	// - {"name":"LOG","value":"debug"}
}

// Overlay writes the drift Diff finds into a copy of the live object: the
// patch from the live object to that copy carries the drift and nothing
// else (package drift's Ensure sends it).
func ExampleOverlay() {
	live := exampleDeployment("nginx:1.25")
	live.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst // server default
	desired := exampleDeployment("nginx:1.26")

	merged := live.DeepCopy()
	if err := compare.Overlay(desired.DeepCopy(), merged); err != nil {
		fmt.Println(err)
		return
	}
	after, _ := compare.Diff(desired, merged)
	fmt.Println(merged.Spec.Template.Spec.Containers[0].Image, merged.Spec.Template.Spec.DNSPolicy, after.Equal)
	// Output:
	// nginx:1.26 ClusterFirst true
}

// The built-in rules are what the API server does that Go types do not
// show. A port's protocol defaults to TCP and keys the port list with its
// number: with KubernetesRules, a port desired leaves without a protocol is
// the server's TCP port, whatever the order; without them, ports pair by
// number alone, in order, and the UDP port meets the TCP one.
func ExampleKubernetesRules() {
	desired := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns", Port: 53},
	}}}
	live := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolTCP},
		{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP},
	}}}

	with, _ := compare.Diff(desired, live, compare.Rules(compare.KubernetesRules()...))
	without, _ := compare.Diff(desired, live)
	fmt.Println(with.Equal, without.Paths)
	// Output:
	// true [spec.ports[port=53].name spec.ports[port=53].protocol]
}
