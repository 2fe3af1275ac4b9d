// Package children is the embedding guide's Website (docs/embedding.md,
// "More children: a ConfigMap and a Service") with the children a web
// site usually has beside its Deployment, all three owned by the Website
// and written by one drift.Writer:
//
//   - a ConfigMap of the server's configuration, built from the spec and
//     mounted by the Deployment's Pods; its content hash on the Pod
//     template (track.Hash) rolls the Deployment when, and only when, the
//     configuration changes;
//   - a Service in front of the Deployment's Pods, of which the Writer
//     compares only what the Website sets: the fields the API server fills
//     in (clusterIP, ipFamilies, a port's protocol, sessionAffinity, ...)
//     are no drift, so a converged Website writes nothing.
//
// Owns() of each kind brings a child that someone edits or deletes back.
package children

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/track"
)

// FieldOwner is the field manager of every write of the reconciler.
const FieldOwner = "website-controller"

// ReasonInvalidHostname is the condition reason of a hostname that is not a
// DNS name.
const ReasonInvalidHostname = "InvalidHostname"

// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=embedding.reconcilekit.dev,resources=websites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch

// New returns the Website's reconciler: a reconcile.Loop around converge,
// whose children c writes.
func New(c client.Client) (*reconcile.Loop[*webv1.Website], error) {
	children := drift.NewWriter(c, FieldOwner)
	loop := reconcile.New(c, FieldOwner, func(ctx context.Context, site *webv1.Website) (reconcile.Progress, error) {
		return converge(ctx, children, site)
	})
	return loop, loop.Validate()
}

// converge makes the Website's three children what its spec says: the
// configuration first, so that the Deployment carries the hash of what is
// written.
func converge(ctx context.Context, children *drift.Writer, site *webv1.Website) (reconcile.Progress, error) {
	if errs := validation.IsDNS1123Subdomain(site.Spec.Hostname); len(errs) > 0 {
		err := fmt.Errorf("spec.hostname %q is not a DNS name: %s", site.Spec.Hostname, strings.Join(errs, "; "))
		return reconcile.Progress{}, errors.Permanent(errors.WithReason(err, ReasonInvalidHostname))
	}
	config := desiredConfig(site)
	if _, err := children.Ensure(ctx, config, drift.Owner(site)); err != nil {
		return reconcile.Progress{}, fmt.Errorf("configmap: %w", err)
	}
	hash, err := track.Hash(config)
	if err != nil {
		return reconcile.Progress{}, err
	}
	if _, err := children.Ensure(ctx, desiredDeployment(site, hash), drift.Owner(site)); err != nil {
		return reconcile.Progress{}, fmt.Errorf("deployment: %w", err)
	}
	if _, err := children.Ensure(ctx, desiredService(site), drift.Owner(site)); err != nil {
		return reconcile.Progress{}, fmt.Errorf("service: %w", err)
	}
	return reconcile.Progress{Reason: "Deployed", Message: "serving " + site.Spec.Hostname}, nil
}

// SetupWithManager sets up the controller with the Manager.
func SetupWithManager(mgr ctrl.Manager) error {
	loop, err := New(mgr.GetClient())
	if err != nil {
		return err
	}
	return Watches(mgr).Complete(loop)
}

// Watches says what the controller watches: its Websites, and the three
// kinds of children it owns, so that a child someone edits or deletes wakes
// its Website.
func Watches(mgr ctrl.Manager) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webv1.Website{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Named("website-children")
}

// labels select the Website's Pods.
func labels(site *webv1.Website) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": site.Name}
}

// desiredConfig is the server's configuration, named after the Website.
func desiredConfig(site *webv1.Website) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name + "-config", Labels: labels(site)},
		Data: map[string]string{
			"default.conf": fmt.Sprintf("server {\n  listen 80;\n  server_name %s;\n  root /usr/share/nginx/html;\n}\n", site.Spec.Hostname),
		},
	}
}

// desiredDeployment serves the site with the configuration mounted; hash
// is the configuration's, so that a new one rolls the Pods.
func desiredDeployment(site *webv1.Website, hash string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name, Labels: labels(site)},
		Spec: appsv1.DeploymentSpec{
			Replicas: site.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels(site)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(site), Annotations: map[string]string{track.HashAnnotation: hash}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:         "web",
						Image:        site.Spec.Image,
						Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/nginx/conf.d", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: site.Name + "-config"}},
					}}},
				},
			},
		},
	}
}

// desiredService puts the Website's Pods behind one name. It sets the
// selector and the port; the API server fills in the rest.
func desiredService(site *webv1.Website) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name, Labels: labels(site)},
		Spec: corev1.ServiceSpec{
			Selector: labels(site),
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
}
