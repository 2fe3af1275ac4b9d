package reconcile_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/status"
)

// Website is an operator author's custom resource, as kubebuilder scaffolds
// it. What a Loop needs of it is the four accessors below its type: the
// conditions (reconcile.Object) and, for status.observedGeneration, the
// observed generation (status.ObservedGenerationSetter).
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebsiteSpec   `json:"spec,omitempty"`
	Status            WebsiteStatus `json:"status,omitempty"`
}

type WebsiteSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
}

type WebsiteStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

func (w *Website) GetConditions() []metav1.Condition  { return w.Status.Conditions }
func (w *Website) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }
func (w *Website) GetObservedGeneration() int64       { return w.Status.ObservedGeneration }
func (w *Website) SetObservedGeneration(g int64)      { w.Status.ObservedGeneration = g }

// DeepCopyObject is what controller-gen generates (written out here so the
// example is self-contained).
func (w *Website) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = append([]metav1.Condition(nil), w.Status.Conditions...)
	return &out
}

// A Loop is a whole reconciler: Sync holds only the business logic, and
// reports how far along the object is. Here readiness depends on a child:
// the Website is InProgress until its Deployment has every replica
// available, then Ready; a negative replica count is a permanent error with
// its own reason. The loop adds no finalizer (none registered), sets the
// conditions and observedGeneration, writes status only when it changed, and
// maps errors to requeues.
func ExampleLoop() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	scheme.AddKnownTypes(schema.GroupVersion{Group: "example.com", Version: "v1"}, &Website{})
	site := &Website{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop", Generation: 1, UID: "3f6c"},
		Spec: WebsiteSpec{Image: "nginx:1.29", Replicas: 2}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(site).WithStatusSubresource(site).Build()

	const fieldOwner = "website-controller" // one name for every write of the operator
	deployments := drift.NewWriter(c, fieldOwner)
	loop := reconcile.New(c, fieldOwner, func(ctx context.Context, site *Website) (reconcile.Progress, error) {
		if site.Spec.Replicas < 0 {
			return reconcile.Progress{}, errors.Permanent(errors.WithReason(
				errors.New("spec.replicas must not be negative"), "InvalidSpec"))
		}
		deploy := desiredDeployment(site)
		if _, err := deployments.Ensure(ctx, deploy, drift.Owner(site)); err != nil {
			return reconcile.Progress{}, err
		}
		// Ensure left the live Deployment in deploy.
		if available := deploy.Status.AvailableReplicas; available < site.Spec.Replicas {
			return reconcile.Progress{State: reconcile.InProgress, Reason: "Deploying",
				Message: fmt.Sprintf("%d of %d replicas available", available, site.Spec.Replicas)}, nil
		}
		return reconcile.Progress{Reason: "Available", Message: "every replica is available"}, nil
	})
	// In a real controller:
	//   ctrl.NewControllerManagedBy(mgr).For(&v1.Website{}).Owns(&appsv1.Deployment{}).Complete(loop)
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(site)}
	show := func() {
		res, err := loop.Reconcile(ctx, req)
		got := &Website{}
		_ = c.Get(ctx, req.NamespacedName, got)
		ready, _ := status.FindCondition(got, status.TypeReady)
		fmt.Printf("Ready=%s %s (%s) observedGeneration=%d terminal=%v requeue=%v\n", ready.Status, ready.Reason,
			ready.Message, got.Status.ObservedGeneration, errors.Is(err, crreconcile.TerminalError(nil)), !res.IsZero())
	}
	show()

	// The Deployment controller brings the replicas up.
	deploy := &appsv1.Deployment{}
	_ = c.Get(ctx, req.NamespacedName, deploy)
	deploy.Status.AvailableReplicas = 2
	_ = c.Status().Update(ctx, deploy)
	show()

	// A bad edit stalls the Website with the reason Sync gave.
	bad := &Website{}
	_ = c.Get(ctx, req.NamespacedName, bad)
	bad.Spec.Replicas, bad.Generation = -1, 2
	_ = c.Update(ctx, bad)
	show()
	// Output:
	// Ready=Unknown Deploying (0 of 2 replicas available) observedGeneration=1 terminal=false requeue=false
	// Ready=True Available (every replica is available) observedGeneration=1 terminal=false requeue=false
	// Ready=False InvalidSpec (spec.replicas must not be negative) observedGeneration=2 terminal=true requeue=false
}

func desiredDeployment(site *Website) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": site.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(site.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: site.Spec.Image}}},
			},
		},
	}
}
