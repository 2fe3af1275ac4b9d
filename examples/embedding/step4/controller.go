// Package step4 is step 4 of the embedding guide (docs/embedding.md): the
// reconciler of step3 with a drift.Writer's Ensure in place of the
// hand-written Get/Create/Update of its children. Ensure compares only the
// fields the desired object sets, so the fields the API server defaulted
// are not drift: a converged Website costs no write at all.
package step4

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// RecordFinalizer deletes a Website's DNS record before the Website goes.
const RecordFinalizer = "embedding.reconcilekit.dev/dns-record"

// FieldOwner is the field manager of every write of the library in this
// reconciler: the operator's own name, the same for all its writes, never
// the binary's ("manager" in every kubebuilder project) nor another
// operator's.
const FieldOwner = "website-controller"

// ReplacedManager is the field manager the children were written under
// before this reconciler adopted drift (step 3's Create and Update: the
// binary's name, "manager" in a kubebuilder project). Ensure takes what it
// wrote over on its first write, so that a field the Website no longer
// asks for is removed rather than left beside the new one.
const ReplacedManager = "manager"

// ReasonInvalidHostname is the condition reason of a hostname that is not a
// DNS name.
const ReasonInvalidHostname = "InvalidHostname"

// WebsiteReconciler reconciles a Website object.
type WebsiteReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// APIReader reads from the API server, not the cache: the status
	// writer re-reads the Website with it after a conflict (the manager's
	// GetAPIReader()).
	APIReader client.Reader
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

// Reconcile moves the cluster towards the Website's spec and reports how
// far it got on the Website's conditions.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	site := &webv1.Website{}
	if err := r.Get(ctx, req.NamespacedName, site); err != nil {
		return r.Policy.Result(ctx, req, ctrl.Result{}, client.IgnoreNotFound(err))
	}

	if !site.DeletionTimestamp.IsZero() {
		return r.Policy.Result(ctx, req, ctrl.Result{}, r.finalize(ctx, site))
	}
	if _, err := finalizer.NewWriter(r.Client, FieldOwner).Add(ctx, site, RecordFinalizer); err != nil {
		return r.Policy.Result(ctx, req, ctrl.Result{}, err)
	}

	writer := status.NewWriter(r.Client, FieldOwner)
	writer.APIReader = r.APIReader
	snapshot := writer.Snapshot(site)
	err := r.converge(ctx, site)
	// Decide once, after recording the outcome: a failed status write joins
	// the decision instead of being decided again.
	return r.Policy.DecideWith(ctx, req, ctrl.Result{}, err, func(d requeue.Decision) error {
		switch {
		case err == nil:
			status.MarkReady(site, "Deployed", "serving "+site.Spec.Hostname)
			status.ObserveGeneration(site)
		case d.Report:
			status.MarkFailure(site, err, d.Class)
			status.ObserveGeneration(site)
		}
		if _, werr := snapshot.Write(ctx); werr != nil {
			return fmt.Errorf("write status: %w", werr)
		}
		return nil
	}).Return()
}

// converge makes the Website's children what its spec says.
func (r *WebsiteReconciler) converge(ctx context.Context, site *webv1.Website) error {
	if errs := validation.IsDNS1123Subdomain(site.Spec.Hostname); len(errs) > 0 {
		err := fmt.Errorf("spec.hostname %q is not a DNS name: %s", site.Spec.Hostname, strings.Join(errs, "; "))
		return errors.Permanent(errors.WithReason(err, ReasonInvalidHostname))
	}
	children := drift.NewWriter(r.Client, FieldOwner)
	if _, err := children.Ensure(ctx, desiredDeployment(site), drift.Owner(site), drift.Replaces(ReplacedManager)); err != nil {
		return fmt.Errorf("deployment: %w", err)
	}
	if _, err := children.Ensure(ctx, desiredRecord(site, r.Directory), drift.Replaces(ReplacedManager)); err != nil {
		return fmt.Errorf("dns record: %w", err)
	}
	return nil
}

// finalize deletes the DNS record, then the finalizer.
func (r *WebsiteReconciler) finalize(ctx context.Context, site *webv1.Website) error {
	if !controllerutil.ContainsFinalizer(site, RecordFinalizer) {
		return nil
	}
	if err := r.deleteRecord(ctx, site); err != nil {
		return fmt.Errorf("delete dns record: %w", err)
	}
	_, err := finalizer.NewWriter(r.Client, FieldOwner).Remove(ctx, site, RecordFinalizer)
	return err
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
