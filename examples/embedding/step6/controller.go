// Package step6 is the sixth step of the embedding guide
// (docs/embedding.md): the Loop of step5, Ready only when the Deployment it
// created is. converge reports the Deployment's health (package health) in
// its Progress: Reconciling while it rolls out, Stalled, naming it, when it
// cannot (a progress deadline passed), Ready once it is available at the
// generation converge wrote. health.Predicate on Owns() wakes the Loop when
// the Deployment's health changes, and only then: no requeue timer.
package step6

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
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile"
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

// The Website is what a Loop reconciles: the compiler says here if one of
// its methods is missing.
var _ reconcile.Object = (*webv1.Website)(nil)

// WebsiteReconciler holds what the Website's logic needs. Its Loop is the
// reconciler.
type WebsiteReconciler struct {
	// Client is guarded by a freshness.Tracker (main.go builds the manager
	// with ctrl.Options{NewClient: tracker.NewClient}): no read returns a
	// copy older than this process's own last write of it. The Loop uses
	// it as it is, and converge reads the Deployment through it, so the
	// Deployment's health is never that of a copy from before its write.
	client.Client
	Scheme *runtime.Scheme
	// Directory is the namespace of the DNS records.
	Directory string
	// Recorder records an event when a Website becomes Ready, and
	// warnings. Nil records none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Loop returns the Website's reconciler: a reconcile.Loop around converge,
// with the DNS record's cleanup as its finalizer.
func (r *WebsiteReconciler) Loop() (*reconcile.Loop[*webv1.Website], error) {
	if freshness.TrackerOf(r.Client) == nil {
		return nil, errors.New("step6: the client is not guarded by a freshness.Tracker")
	}
	finalizers := &finalizer.Registry[*webv1.Website]{}
	if err := finalizers.Register(RecordFinalizer, finalizer.Func[*webv1.Website](r.deleteRecord)); err != nil {
		return nil, err
	}
	loop := reconcile.New(r.Client, FieldOwner, r.converge)
	loop.Finalizers = finalizers
	loop.Recorder = r.Recorder
	return loop, loop.Validate()
}

// converge makes the Website's children what its spec says.
func (r *WebsiteReconciler) converge(ctx context.Context, site *webv1.Website) (reconcile.Progress, error) {
	if errs := validation.IsDNS1123Subdomain(site.Spec.Hostname); len(errs) > 0 {
		err := fmt.Errorf("spec.hostname %q is not a DNS name: %s", site.Spec.Hostname, strings.Join(errs, "; "))
		return reconcile.Progress{}, errors.Permanent(errors.WithReason(err, ReasonInvalidHostname))
	}
	children := drift.NewWriter(r.Client, FieldOwner)
	deployment := desiredDeployment(site)
	if _, err := children.Ensure(ctx, deployment, drift.Owner(site), drift.Replaces(ReplacedManager)); err != nil {
		return reconcile.Progress{}, fmt.Errorf("deployment: %w", err)
	}
	if _, err := children.Ensure(ctx, desiredRecord(site, r.Directory), drift.Replaces(ReplacedManager)); err != nil {
		return reconcile.Progress{}, fmt.Errorf("dns record: %w", err)
	}
	// Ensure left the Deployment as the server returned it or as the
	// guarded client read it, never older than converge's last write: its
	// health says whether it is available at the generation written.
	h, err := health.Of(deployment)
	if err != nil {
		return reconcile.Progress{}, err
	}
	return reconcile.Progress{Reason: "Deployed", Message: "serving " + site.Spec.Hostname}.WithChildren(h), nil
}

// deleteRecord is the finalizer's cleanup.
func (r *WebsiteReconciler) deleteRecord(ctx context.Context, site *webv1.Website) error {
	record := desiredRecord(site, r.Directory)
	if err := r.Delete(ctx, record); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete dns record: %w", err)
	}
	return nil
}

// SetupWithManager sets up the controller with the Manager.
func (r *WebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	loop, err := r.Loop()
	if err != nil {
		return err
	}
	return r.Watches(mgr).Complete(loop)
}

// Watches says what the controller watches. SetupWithManager completes it
// with the Loop; the guide's tests complete it with the Loop wrapped, to
// count its reconciles. reconcile.Predicate lets through what the Loop acts
// on (spec changes, deletion, resyncs), not its own status writes;
// health.Predicate lets through a Deployment's changes of health (and of
// spec), not the status updates of a rollout that change nothing the
// Website reports.
func (r *WebsiteReconciler) Watches(mgr ctrl.Manager) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webv1.Website{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate())).
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
