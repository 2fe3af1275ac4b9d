package applyset_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/applyset"
)

// webApp returns the children of a web application: its configuration, a
// Deployment that mounts it, a Service, and a PodDisruptionBudget when
// withPDB is set.
func webApp(image string, withPDB bool) []applyset.Child {
	labels := map[string]string{"app": "shop"}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop-config"},
		Data: map[string]string{"greeting": "hello"}}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}},
		}}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	children := []applyset.Child{
		{Object: config},
		{Object: deployment, DependsOn: []client.Object{config}, Health: applyset.Exists},
		{Object: service},
	}
	if withPDB {
		children = append(children, applyset.Child{Object: &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1},
				Selector: &metav1.LabelSelector{MatchLabels: labels}}}, Health: applyset.Exists})
	}
	return children
}

// A set planned, applied, changed and shrunk: the plan says what the Apply
// then does; the Deployment waits for the ConfigMap it mounts; a child
// that leaves the set is pruned.
func ExampleSet_Apply() {
	ctx := context.Background()
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop-app", UID: "1"}}
	// The fake client needs to know which kinds are namespaced; a
	// manager's client asks the API server.
	c := fake.NewClientBuilder().WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(clientgoscheme.Scheme)).
		WithObjects(parent).WithReturnManagedFields().Build()
	set := applyset.New(c, "webapp-controller")

	show := func(title string, res applyset.Result, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s:\n%s\n", title, res)
	}
	res, err := set.Apply(ctx, parent, webApp("nginx:1.27", true), applyset.Plan())
	show("plan", res, err)
	res, err = set.Apply(ctx, parent, webApp("nginx:1.27", true))
	show("apply", res, err)
	res, err = set.Apply(ctx, parent, webApp("nginx:1.27", true))
	show("apply again: the ConfigMap is there", res, err)
	res, err = set.Apply(ctx, parent, webApp("nginx:1.28", false))
	show("a new image, no PodDisruptionBudget", res, err)
	// Output:
	// plan:
	// patch parent: metadata.annotations[applyset.kubernetes.io/contains-group-kinds], metadata.annotations[applyset.kubernetes.io/tooling], metadata.labels[applyset.kubernetes.io/id]
	// create PodDisruptionBudget.policy default/shop
	// create ConfigMap default/shop-config
	// create Service default/shop
	// wait Deployment.apps default/shop: waits for ConfigMap default/shop-config: written by this reconcile, not yet observed
	// apply:
	// patch parent: metadata.annotations[applyset.kubernetes.io/contains-group-kinds], metadata.annotations[applyset.kubernetes.io/tooling], metadata.labels[applyset.kubernetes.io/id]
	// create PodDisruptionBudget.policy default/shop
	// create ConfigMap default/shop-config
	// create Service default/shop
	// wait Deployment.apps default/shop: waits for ConfigMap default/shop-config: written by this reconcile, not yet observed
	// apply again: the ConfigMap is there:
	// create Deployment.apps default/shop
	// a new image, no PodDisruptionBudget:
	// patch Deployment.apps default/shop: spec.template.spec.containers[name=web].image
	// prune PodDisruptionBudget.policy default/shop
}
