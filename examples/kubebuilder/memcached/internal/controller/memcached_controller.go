/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/requeue"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
)

const memcachedFinalizer = "cache.example.com/finalizer"

// Definitions to manage status conditions
const (
	// typeAvailableMemcached represents the status of the Deployment reconciliation
	typeAvailableMemcached = "Available"
	// typeDegradedMemcached represents the status used when the custom resource is deleted and the finalizer operations are yet to occur.
	typeDegradedMemcached = "Degraded"
)

// fieldOwner is the field manager of every write of this operator.
const fieldOwner = "memcached-operator"

// replacedManager is the field manager of the scaffolded controller's
// writes (the binary's name): its fields of the Deployment become ours.
const replacedManager = "manager"

// MemcachedReconciler reconciles a Memcached object
type MemcachedReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder

	// What the loop remembers between reconciles: zero values are ready to
	// use, so a MemcachedReconciler{Client, Scheme} works as it is.
	policy    requeue.Policy
	freshness freshness.Tracker
}

// The following markers are used to generate the rules permissions (RBAC) on config/rbac using controller-gen
// when the command <make manifests> is executed.
// To know more about markers see: https://book.kubebuilder.io/reference/markers.html

// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch

// Reconcile runs a reconcile.Loop around converge: it fetches the
// Memcached, keeps its finalizer and runs the cleanup on deletion, sets
// Ready/Reconciling/Stalled with Available and Degraded mirrored, writes
// the status only when it changed, and decides what an error means.
func (r *MemcachedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.loop().Reconcile(ctx, req)
}

// loop returns the reconcile.Loop of one call. A Loop keeps no state of
// its own beyond its Policy and Freshness, which live in r: building it per
// call costs a few allocations and no request.
func (r *MemcachedReconciler) loop() *reconcile.Loop[*cachev1alpha1.Memcached] {
	finalizers := &finalizer.Registry[*cachev1alpha1.Memcached]{}
	// Register fails only for a name registered twice.
	_ = finalizers.Register(memcachedFinalizer, finalizer.Func[*cachev1alpha1.Memcached](r.doFinalizerOperationsForMemcached))
	loop := reconcile.New(r.Client, fieldOwner, r.converge)
	loop.Finalizers = finalizers
	loop.Recorder = r.Recorder
	loop.Mirror = reconcile.Mirror{Ready: typeAvailableMemcached, Failing: typeDegradedMemcached}
	loop.Policy = &r.policy
	loop.Freshness = &r.freshness
	return loop
}

// converge makes the Memcached's Deployment what its spec says.
func (r *MemcachedReconciler) converge(ctx context.Context, memcached *cachev1alpha1.Memcached) (reconcile.Progress, error) {
	dep, err := r.deploymentForMemcached(memcached)
	if err != nil {
		// The operator's own configuration (MEMCACHED_IMAGE) is missing:
		// retrying will not help until it is fixed.
		return reconcile.Progress{}, errors.Permanent(errors.WithReason(
			fmt.Errorf("Failed to create Deployment for the custom resource (%s): (%w)", memcached.Name, err), "Reconciling"))
	}
	if _, err := drift.NewWriter(r.Client, fieldOwner).EnsureApplyConfiguration(ctx, dep, drift.Owner(memcached),
		drift.Replaces(replacedManager), drift.ForceOwnership()); err != nil {
		return reconcile.Progress{}, fmt.Errorf("deployment: %w", err)
	}
	return reconcile.Progress{Reason: "Reconciling", Message: fmt.Sprintf(
		"Deployment for custom resource (%s) with %d replicas created successfully", memcached.Name, ptr.Deref(memcached.Spec.Size, 0))}, nil
}

// doFinalizerOperationsForMemcached will perform the required operations before delete the CR.
func (r *MemcachedReconciler) doFinalizerOperationsForMemcached(_ context.Context, cr *cachev1alpha1.Memcached) error {
	// TODO(user): Add the cleanup steps that the operator
	// needs to do before the CR can be deleted. Examples
	// of finalizers include performing backups and deleting
	// resources that are not owned by this CR, like a PVC.

	// The following implementation will raise an event
	if r.Recorder != nil {
		r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, "Deleting", "Delete",
			"Custom Resource %s is being deleted from the namespace %s", cr.Name, cr.Namespace)
	}
	return nil
}

// deploymentForMemcached returns the Memcached's Deployment as an apply
// configuration: it sets the fields this operator owns, and no others, so
// the apply claims no zero value of a field left alone (see drift's
// "Apply configurations").
func (r *MemcachedReconciler) deploymentForMemcached(
	memcached *cachev1alpha1.Memcached) (*appsv1ac.DeploymentApplyConfiguration, error) {
	ls := labelsForMemcached()

	// Get the Operand image
	image, err := imageForMemcached()
	if err != nil {
		return nil, err
	}

	spec := appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(ls)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(ls).
			WithSpec(corev1ac.PodSpec().
				// TODO(user): Uncomment the following code to configure the nodeAffinity expression
				// according to the platforms which are supported by your solution. It is considered
				// best practice to support multiple architectures. build your manager image using the
				// makefile target docker-buildx. Also, you can use docker manifest inspect <image>
				// to check what are the platforms supported.
				// More info: https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#node-affinity
				// WithAffinity(corev1ac.Affinity().WithNodeAffinity(corev1ac.NodeAffinity().
				//	WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.NodeSelector().
				//		WithNodeSelectorTerms(corev1ac.NodeSelectorTerm().WithMatchExpressions(
				//			corev1ac.NodeSelectorRequirement().WithKey("kubernetes.io/arch").
				//				WithOperator(corev1.NodeSelectorOpIn).WithValues("amd64", "arm64", "ppc64le", "s390x"),
				//			corev1ac.NodeSelectorRequirement().WithKey("kubernetes.io/os").
				//				WithOperator(corev1.NodeSelectorOpIn).WithValues("linux")))))).
				WithSecurityContext(corev1ac.PodSecurityContext().
					WithRunAsNonRoot(true).
					// IMPORTANT: seccomProfile was introduced with Kubernetes 1.19
					// If you are looking for to produce solutions to be supported
					// on lower versions you must remove this option.
					WithSeccompProfile(corev1ac.SeccompProfile().
						WithType(corev1.SeccompProfileTypeRuntimeDefault))).
				WithContainers(corev1ac.Container().
					WithImage(image).
					WithName("memcached").
					WithImagePullPolicy(corev1.PullIfNotPresent).
					// Ensure restrictive context for the container
					// More info: https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted
					WithSecurityContext(corev1ac.SecurityContext().
						WithRunAsNonRoot(true).
						WithRunAsUser(1001).
						WithAllowPrivilegeEscalation(false).
						WithCapabilities(corev1ac.Capabilities().
							WithDrop("ALL"))).
					WithPorts(corev1ac.ContainerPort().
						WithContainerPort(memcached.Spec.ContainerPort).
						WithName("memcached")).
					WithCommand("memcached", "--memory-limit=64", "-o", "modern", "-v"))))
	if memcached.Spec.Size != nil {
		spec.WithReplicas(*memcached.Spec.Size)
	}

	// The ownerRef for the Deployment is set by drift.Owner in converge.
	// More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/
	return appsv1ac.Deployment(memcached.Name, memcached.Namespace).WithSpec(spec), nil
}

// labelsForMemcached returns the labels for selecting the resources
// More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/
func labelsForMemcached() map[string]string {
	var imageTag string
	image, err := imageForMemcached()
	if err == nil {
		imageTag = strings.Split(image, ":")[1]
	}
	return map[string]string{
		"app.kubernetes.io/name":       "memcached",
		"app.kubernetes.io/version":    imageTag,
		"app.kubernetes.io/managed-by": "MemcachedController",
	}
}

// imageForMemcached gets the Operand image which is managed by this controller
// from the MEMCACHED_IMAGE environment variable defined in the config/manager/manager.yaml
func imageForMemcached() (string, error) {
	var imageEnvVar = "MEMCACHED_IMAGE"
	image, found := os.LookupEnv(imageEnvVar)
	if !found {
		return "", fmt.Errorf("unable to find %s environment variable with the image", imageEnvVar)
	}
	return image, nil
}

// SetupWithManager sets up the controller with the Manager.
// The whole idea is to be watching the resources that matter for the controller.
// reconcile.Predicate lets through what the loop acts on (spec changes,
// deletion, resyncs), not its own status writes.
func (r *MemcachedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.Memcached{}, builder.WithPredicates(reconcile.Predicate())).
		Named("memcached").
		Owns(&appsv1.Deployment{}).
		Complete(r)
}
