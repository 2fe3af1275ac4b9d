// Package step1 is step 1 of the embedding guide (docs/embedding.md): the
// reconciler of step0 with reconcilekit's errors package and a
// requeue.Policy. Every error is classified once: a hostname that is not a
// DNS name is permanent (a terminal error, not retried until the spec
// changes), a conflict is a quiet short requeue instead of an error log,
// and the condition's reason and message come from the error and stay the
// same on every retry.
package step1

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/requeue"
)

// RecordFinalizer deletes a Website's DNS record before the Website goes.
const RecordFinalizer = "embedding.reconcilekit.dev/dns-record"

// ReasonInvalidHostname is the condition reason of a hostname that is not a
// DNS name.
const ReasonInvalidHostname = "InvalidHostname"

// WebsiteReconciler reconciles a Website object.
type WebsiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Directory is the namespace of the DNS records.
	Directory string
	// Policy decides what an error means and what to return. Its zero
	// value is ready to use.
	Policy requeue.Policy
}

// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile moves the cluster towards the Website's spec, and lets the
// Policy decide what its error means.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	return r.Policy.Result(ctx, req, res, err)
}

func (r *WebsiteReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	site := &webv1.Website{}
	if err := r.Get(ctx, req.NamespacedName, site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !site.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(site, RecordFinalizer) {
			if err := r.deleteRecord(ctx, site); err != nil {
				return ctrl.Result{}, fmt.Errorf("delete dns record: %w", err)
			}
			controllerutil.RemoveFinalizer(site, RecordFinalizer)
			if err := r.Update(ctx, site); err != nil {
				return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
			}
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(site, RecordFinalizer) {
		controllerutil.AddFinalizer(site, RecordFinalizer)
		if err := r.Update(ctx, site); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	if errs := validation.IsDNS1123Subdomain(site.Spec.Hostname); len(errs) > 0 {
		err := fmt.Errorf("spec.hostname %q is not a DNS name: %s", site.Spec.Hostname, strings.Join(errs, "; "))
		return r.fail(ctx, site, errors.Permanent(errors.WithReason(err, ReasonInvalidHostname)))
	}
	if err := r.reconcileDeployment(ctx, site); err != nil {
		return r.fail(ctx, site, fmt.Errorf("deployment: %w", err))
	}
	if err := r.reconcileRecord(ctx, site); err != nil {
		return r.fail(ctx, site, fmt.Errorf("dns record: %w", err))
	}

	meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Deployed",
		Message: "serving " + site.Spec.Hostname, ObservedGeneration: site.Generation,
	})
	site.Status.ObservedGeneration = site.Generation
	if err := r.Status().Update(ctx, site); err != nil {
		return ctrl.Result{}, fmt.Errorf("update status: %w", err)
	}
	return ctrl.Result{}, nil
}

// fail records err on the Ready condition and returns it for the Policy.
// Its reason and message stay the same when the same failure repeats.
func (r *WebsiteReconciler) fail(ctx context.Context, site *webv1.Website, err error) (ctrl.Result, error) {
	meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: errors.Reason(err),
		Message: errors.Message(err), ObservedGeneration: site.Generation,
	})
	if uerr := r.Status().Update(ctx, site); uerr != nil {
		err = errors.Join(err, fmt.Errorf("update status: %w", uerr))
	}
	return ctrl.Result{}, err
}

func (r *WebsiteReconciler) reconcileDeployment(ctx context.Context, site *webv1.Website) error {
	want := desiredDeployment(site)
	if err := ctrl.SetControllerReference(site, want, r.Scheme); err != nil {
		return err
	}
	found := &appsv1.Deployment{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), found)
	if apierrors.IsNotFound(err) {
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	found.Spec = want.Spec
	return r.Update(ctx, found)
}

func (r *WebsiteReconciler) reconcileRecord(ctx context.Context, site *webv1.Website) error {
	want := desiredRecord(site, r.Directory)
	found := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), found)
	if apierrors.IsNotFound(err) {
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(found.Data, want.Data) {
		return nil
	}
	found.Data = want.Data
	return r.Update(ctx, found)
}

func (r *WebsiteReconciler) deleteRecord(ctx context.Context, site *webv1.Website) error {
	record := desiredRecord(site, r.Directory)
	if err := r.Delete(ctx, record); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// SetupWithManager sets up the controller with the Manager.
func (r *WebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.Watches(mgr).Complete(r)
}

// Watches says what the controller watches. SetupWithManager completes it
// with r; the guide's tests complete it with r wrapped, to count its
// reconciles.
func (r *WebsiteReconciler) Watches(mgr ctrl.Manager) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webv1.Website{}).
		Owns(&appsv1.Deployment{}).
		Named("website")
}

func desiredDeployment(site *webv1.Website) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": site.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: site.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "web",
					Image: site.Spec.Image,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				}}},
			},
		},
	}
}

// desiredRecord is the Website's DNS record, named after the Website's
// namespace and name (a dot cannot occur in a namespace name, so two
// Websites never share a record).
func desiredRecord(site *webv1.Website, directory string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: directory, Name: site.Namespace + "." + site.Name},
		Data:       map[string]string{"hostname": site.Spec.Hostname, "target": site.Namespace + "/" + site.Name},
	}
}
