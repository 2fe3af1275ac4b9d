// Package step0 is where the embedding guide (docs/embedding.md) starts: a
// Website reconciler as kubebuilder scaffolds it and as operator authors
// grow it by hand, with no reconcilekit package. It works, and it has the
// usual rough edges the next steps remove one package at a time: it writes
// the Deployment and the status on every reconcile, retries a spec it can
// never accept, and returns every error raw, conflicts included.
//
// A Website gets a Deployment of its own (garbage collected with it) and a
// DNS record: a ConfigMap in the directory namespace, standing in for an
// external DNS provider. An owner reference cannot reach across namespaces,
// so a finalizer deletes the record.
package step0

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
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
)

// RecordFinalizer deletes a Website's DNS record before the Website goes.
const RecordFinalizer = "embedding.reconcilekit.dev/dns-record"

// WebsiteReconciler reconciles a Website object.
type WebsiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Directory is the namespace of the DNS records.
	Directory string
}

// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile moves the cluster towards the Website's spec.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	site := &webv1.Website{}
	if err := r.Get(ctx, req.NamespacedName, site); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		log.Error(err, "Failed to get Website")
		return ctrl.Result{}, err
	}

	if !site.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(site, RecordFinalizer) {
			if err := r.deleteRecord(ctx, site); err != nil {
				return ctrl.Result{}, err
			}
			controllerutil.RemoveFinalizer(site, RecordFinalizer)
			if err := r.Update(ctx, site); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(site, RecordFinalizer) {
		controllerutil.AddFinalizer(site, RecordFinalizer)
		if err := r.Update(ctx, site); err != nil {
			return ctrl.Result{}, err
		}
	}

	if errs := validation.IsDNS1123Subdomain(site.Spec.Hostname); len(errs) > 0 {
		err := fmt.Errorf("spec.hostname %q is not a DNS name: %s", site.Spec.Hostname, strings.Join(errs, "; "))
		return r.fail(ctx, site, err)
	}
	if err := r.reconcileDeployment(ctx, site); err != nil {
		return r.fail(ctx, site, err)
	}
	if err := r.reconcileRecord(ctx, site); err != nil {
		return r.fail(ctx, site, err)
	}

	meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Deployed",
		Message: "serving " + site.Spec.Hostname, ObservedGeneration: site.Generation,
	})
	site.Status.ObservedGeneration = site.Generation
	if err := r.Status().Update(ctx, site); err != nil {
		log.Error(err, "Failed to update Website status")
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// fail records err on the Ready condition and returns it, to be retried.
func (r *WebsiteReconciler) fail(ctx context.Context, site *webv1.Website, err error) (ctrl.Result, error) {
	meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "Failed",
		Message: err.Error(), ObservedGeneration: site.Generation,
	})
	if uerr := r.Status().Update(ctx, site); uerr != nil {
		logf.FromContext(ctx).Error(uerr, "Failed to update Website status")
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
