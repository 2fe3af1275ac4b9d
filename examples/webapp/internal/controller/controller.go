// Package controller is the WebApp operator's reconciler: a web
// application of several kinds of children, some optional, one of a kind
// that may not be installed, written as one set with package applyset:
//
//   - a ConfigMap of the WebApp's configuration, mounted by
//   - a Deployment, which waits for the ConfigMap (Child.DependsOn): it is
//     written only once the ConfigMap is there as written, and rolls when
//     the configuration changes (a hash of it in its Pod template);
//   - a Service;
//   - a PodDisruptionBudget while spec.disruptionBudget is set, deleted
//     when it is not;
//   - a ServiceMonitor (the Prometheus operator's) while spec.monitoring
//     is set, which waits, the WebApp Reconciling, while its kind is not
//     installed; the CustomResourceDefinition's arrival wakes the WebApp.
//
// The set's Result says the WebApp's health: Ready once the Deployment is
// available and nothing waits. A reconcile.Loop runs the rest.
package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	webappv1 "github.com/reconcilekit/reconcilekit/examples/webapp/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/requeue"
)

// FieldOwner is the field manager of every write of the operator.
const FieldOwner = "webapp-controller"

// ReasonDeployed is the WebApp's reason once its children are written.
const ReasonDeployed = "Deployed"

// The WebApp is what a Loop reconciles.
var _ reconcile.Object = (*webappv1.WebApp)(nil)

// ManagerOptions returns opts with what the operator needs of its manager:
// a client whose reads follow its own writes (the set lists its members
// from the cache), and unstructured objects (the ServiceMonitor, whose Go
// type the operator does not import) read from the cache too, so that a
// converged WebApp costs no request.
func ManagerOptions(opts ctrl.Options, tracker *freshness.Tracker) ctrl.Options {
	opts.NewClient = tracker.NewClient
	if opts.Client.Cache == nil {
		opts.Client.Cache = &client.CacheOptions{}
	}
	opts.Client.Cache.Unstructured = true
	return opts
}

// Reconciler reconciles WebApps. Build it with [New].
type Reconciler struct {
	client client.Client
	// Set writes each WebApp's children.
	Set *applyset.Set
	// Policy decides what an error means; nil: the Loop's own.
	Policy *requeue.Policy
	// Recorder records the WebApp's events (Ready, warnings, corrected
	// drift); nil records none.
	Recorder events.EventRecorder
}

// New returns the WebApp reconciler of the manager's client.
func New(c client.Client) *Reconciler {
	return &Reconciler{client: c, Set: applyset.New(c, FieldOwner)}
}

// +kubebuilder:rbac:groups=webapp.reconcilekit.dev,resources=webapps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=webapp.reconcilekit.dev,resources=webapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Loop returns the WebApp's reconciler: a reconcile.Loop around converge,
// which tells the Set when a WebApp is gone, so that the Set forgets it if
// it was waiting for the ServiceMonitor kind.
func (r *Reconciler) Loop() (*reconcile.Loop[*webappv1.WebApp], error) {
	r.Set.Recorder = r.Recorder
	loop := reconcile.New(r.client, FieldOwner, r.converge)
	loop.Recorder = r.Recorder
	loop.Policy = r.Policy
	loop.Gone = r.Set.Forget
	return loop, loop.Validate()
}

// converge writes the WebApp's set of children and reports its health.
func (r *Reconciler) converge(ctx context.Context, app *webappv1.WebApp) (reconcile.Progress, error) {
	res, err := r.Set.Apply(ctx, app, Children(app))
	if err != nil {
		return reconcile.Progress{}, err
	}
	return reconcile.Progress{Reason: ReasonDeployed, Message: "serving " + app.Spec.Image}.WithChildren(res.Health()), nil
}

// Children returns what the WebApp's spec asks for, as a set.
func Children(app *webappv1.WebApp) []applyset.Child {
	config := configMap(app)
	service := service(app)
	children := []applyset.Child{
		{Object: config},
		{Object: deployment(app, config), DependsOn: []client.Object{config}},
		{Object: service},
	}
	if app.Spec.DisruptionBudget != nil {
		children = append(children, applyset.Child{Object: disruptionBudget(app)})
	}
	if app.Spec.Monitoring != nil {
		children = append(children, applyset.Child{Object: serviceMonitor(app), DependsOn: []client.Object{service},
			Health: applyset.Exists}) // a ServiceMonitor has no status
	}
	return children
}

// SetupWithManager sets up the controller with the Manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	loop, err := r.Loop()
	if err != nil {
		return err
	}
	return r.Watches(mgr).Complete(loop)
}

// Watches says what the controller watches: the WebApps, every kind of
// child it owns (a change wakes its WebApp; the Deployment's only when its
// health changes), and CustomResourceDefinitions, metadata only, whose
// arrival wakes a WebApp waiting for the ServiceMonitor kind. The
// ServiceMonitor itself is not watched: the kind may not exist when the
// operator starts.
func (r *Reconciler) Watches(mgr ctrl.Manager) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.WebApp{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate())).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, r.Set.EnqueueWaiting()).
		Named("webapp")
}

func labels(app *webappv1.WebApp) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": app.Name}
}

func configMap(app *webappv1.WebApp) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name + "-config", Labels: labels(app)},
		Data:       app.Spec.Config,
	}
}

// configHash is a hash of the configuration, in the Pod template so that a
// change rolls the Pods.
func configHash(data map[string]string) string {
	h := sha256.New()
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(data[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func deployment(app *webappv1.WebApp, config *corev1.ConfigMap) *appsv1.Deployment {
	ls := labels(app)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, Labels: ls},
		Spec: appsv1.DeploymentSpec{
			Replicas: app.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: ls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ls, Annotations: map[string]string{"webapp.reconcilekit.dev/config-hash": configHash(config.Data)}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:         "web",
						Image:        app.Spec.Image,
						Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: app.Spec.Port}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/webapp"}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: config.Name}}}}},
				},
			},
		},
	}
}

func service(app *webappv1.WebApp) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, Labels: labels(app)},
		Spec: corev1.ServiceSpec{
			Selector: labels(app),
			Ports:    []corev1.ServicePort{{Name: "http", Port: app.Spec.Port, TargetPort: intstr.FromString("http")}},
		},
	}
}

func disruptionBudget(app *webappv1.WebApp) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(app.Spec.DisruptionBudget.MinAvailable)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name, Labels: labels(app)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: labels(app)},
		},
	}
}

// serviceMonitor is the Prometheus operator's ServiceMonitor
// (monitoring.coreos.com/v1), unstructured: the operator does not import
// its Go types for a kind that may not be installed.
func serviceMonitor(app *webappv1.WebApp) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": toAny(labels(app))},
			"endpoints": []any{map[string]any{"port": "http", "interval": app.Spec.Monitoring.Interval}},
		},
	}}
	u.SetAPIVersion("monitoring.coreos.com/v1")
	u.SetKind("ServiceMonitor")
	u.SetNamespace(app.Namespace)
	u.SetName(app.Name)
	u.SetLabels(labels(app))
	return u
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
