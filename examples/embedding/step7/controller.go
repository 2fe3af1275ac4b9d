// Package step7 is the last step of the embedding guide
// (docs/embedding.md): step6's children written as one set (package
// applyset). The Deployment and the DNS record in the directory namespace
// go through one Set.Apply, which links the record to the Website (an
// owner reference cannot cross namespaces), records the set on the Website
// for kubectl, and reports the children's health; the finalizer's cleanup
// is the same call with no children, which deletes every member, wherever
// it lives.
package step7

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile"
)

// RecordFinalizer deletes a Website's children before the Website goes: the
// DNS record, which the garbage collector cannot reach, among them.
const RecordFinalizer = "embedding.reconcilekit.dev/dns-record"

// FieldOwner is the field manager of every write of the library in this
// reconciler: the operator's own name, the same for all its writes, never
// the binary's ("manager" in every kubebuilder project) nor another
// operator's.
const FieldOwner = "website-controller"

// ReplacedManager is the field manager the children were written under
// before this reconciler adopted drift (step 3's Create and Update: the
// binary's name, "manager" in a kubebuilder project). The set takes what it
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
	// it as it is, and the set reads the children through it, so the
	// Deployment's health is never that of a copy from before its write.
	client.Client
	Scheme *runtime.Scheme
	// Directory is the namespace of the DNS records.
	Directory string
	// Recorder records an event when a Website becomes Ready, and
	// warnings. Nil records none.
	Recorder events.EventRecorder

	// children writes each Website's children as a set; Loop builds it.
	children *applyset.Set
}

// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Loop returns the Website's reconciler: a reconcile.Loop around converge,
// with the children's cleanup as its finalizer.
func (r *WebsiteReconciler) Loop() (*reconcile.Loop[*webv1.Website], error) {
	if freshness.TrackerOf(r.Client) == nil {
		return nil, errors.New("step7: the client is not guarded by a freshness.Tracker")
	}
	r.children = applyset.New(r.Client, FieldOwner)
	r.children.Replaces = []string{ReplacedManager}
	r.children.Recorder = r.Recorder
	finalizers := &finalizer.Registry[*webv1.Website]{}
	if err := finalizers.Register(RecordFinalizer, finalizer.Func[*webv1.Website](r.deleteChildren)); err != nil {
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
	res, err := r.children.Apply(ctx, site, []applyset.Child{
		{Object: desiredDeployment(site)},
		{Object: desiredRecord(site, r.Directory)},
	})
	if err != nil {
		return reconcile.Progress{}, err
	}
	// The set's health is its children's, each as the server returned it
	// or as the guarded client read it: the Deployment available at the
	// generation written, nothing waiting.
	return reconcile.Progress{Reason: "Deployed", Message: "serving " + site.Spec.Hostname}.WithChildren(res.Health()), nil
}

// deleteChildren is the finalizer's cleanup: the set with no children
// deletes every member, the DNS record in its directory included.
func (r *WebsiteReconciler) deleteChildren(ctx context.Context, site *webv1.Website) error {
	if _, err := r.children.Apply(ctx, site, nil); err != nil {
		return fmt.Errorf("delete children: %w", err)
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
