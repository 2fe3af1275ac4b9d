package children_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/examples/embedding/children"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/track"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../config/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{webv1.AddToScheme},
		Shared:            true,
	})
}

// start runs the controller in a namespace of its own, resyncing every
// second, and returns its manager and the namespace.
func start(t *testing.T) (*testenv.Manager, string) {
	t.Helper()
	ns := env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := children.New(mgr.GetClient())
	if err != nil {
		t.Fatal(err)
	}
	if err := children.Watches(mgr).Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr, ns
}

// get reads obj from the API server, named name in ns.
func get(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	if err := env.Client(t).Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

// TestAWebsiteOwnsItsConfigMapDeploymentAndService: a Website converges
// with its three children, each controlled by it; the Deployment mounts
// the ConfigMap and carries its hash, the Service selects the Deployment's
// Pods; a converged resync writes nothing, the Service's server-filled
// fields included; a new hostname rewrites the ConfigMap and rolls the
// Deployment, and leaves the Service alone; a Service someone edits is put
// back, a port someone adds kept, a Service someone deletes created again.
func TestAWebsiteOwnsItsConfigMapDeploymentAndService(t *testing.T) {
	t.Parallel()
	mgr, ns := start(t)
	ctx, c := t.Context(), env.Client(t)
	site := &webv1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: webv1.WebsiteSpec{Hostname: "shop.example.com"}}
	if err := c.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	ready := func() bool { return testenv.HasCondition(site, "Ready", metav1.ConditionTrue) }
	if err := mgr.WaitConverged(ctx, site, "Ready", ready); err != nil {
		t.Fatal(err)
	}

	var (
		config     corev1.ConfigMap
		deployment appsv1.Deployment
		service    corev1.Service
	)
	get(t, ns, "shop-config", &config)
	get(t, ns, "shop", &deployment)
	get(t, ns, "shop", &service)
	for _, child := range []client.Object{&config, &deployment, &service} {
		if ref := metav1.GetControllerOf(child); ref == nil || ref.UID != site.UID {
			t.Errorf("%T %s: controller %v, want the Website", child, child.GetName(), ref)
		}
	}
	if !strings.Contains(config.Data["default.conf"], "server_name shop.example.com;") {
		t.Errorf("configuration:\n%s\nwant server_name shop.example.com", config.Data["default.conf"])
	}
	pod := deployment.Spec.Template
	if v := pod.Spec.Volumes; len(v) != 1 || v[0].ConfigMap == nil || v[0].ConfigMap.Name != "shop-config" {
		t.Errorf("the Deployment's volumes are %v, want the ConfigMap shop-config", v)
	}
	hash, err := track.Hash(&config)
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Annotations[track.HashAnnotation]; got != hash {
		t.Errorf("the Pod template's hash is %q, want the ConfigMap's %q", got, hash)
	}
	for k, v := range service.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the Deployment's Pods do not carry (%v)", k, v, pod.Labels)
		}
	}
	if service.Spec.ClusterIP == "" || service.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("the API server filled in no clusterIP or protocol: %+v", service.Spec)
	}

	// Converged: a resync writes nothing, though the Service holds fields
	// the Website does not set.
	mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(site)
	if err := mgr.Reconciles.Wait(ctx, key, mgr.Reconciles.Count(key)+1); err != nil {
		t.Fatal(err)
	}
	if writes := mgr.Requests.Writes(); len(writes) > 0 {
		t.Errorf("a resync of a converged Website wrote %v", writes)
	}

	// A new hostname: a new configuration, and a rollout; the Service stays.
	patch := client.MergeFrom(site.DeepCopy())
	site.Spec.Hostname = "www.example.com"
	if err := c.Patch(ctx, site, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitFor(ctx, &config, "the new hostname", func() bool {
		return strings.Contains(config.Data["default.conf"], "server_name www.example.com;")
	}); err != nil {
		t.Fatal(err)
	}
	newHash, err := track.Hash(&config)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.WaitFor(ctx, &deployment, "the new configuration's hash", func() bool {
		return deployment.Spec.Template.Annotations[track.HashAnnotation] == newHash
	}); err != nil {
		t.Fatal(err)
	}
	if err := mgr.WaitConverged(ctx, site, "Ready", ready); err != nil {
		t.Fatal(err)
	}
	var after corev1.Service
	get(t, ns, "shop", &after)
	if after.ResourceVersion != service.ResourceVersion {
		t.Errorf("a new hostname wrote the Service (resourceVersion %s → %s)", service.ResourceVersion, after.ResourceVersion)
	}

	// Someone points the Service's port elsewhere: put back.
	after.Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
	if err := c.Update(ctx, &after); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitFor(ctx, &after, "targetPort http again", func() bool {
		return after.Spec.Ports[0].TargetPort == intstr.FromString("http")
	}); err != nil {
		t.Fatal(err)
	}
	// Someone adds a port of their own: it is theirs, and stays.
	after.Spec.Ports = append(after.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090})
	n := mgr.Reconciles.Count(key)
	if err := c.Update(ctx, &after); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Reconciles.Wait(ctx, key, n+1); err != nil { // woken by the Service's change
		t.Fatal(err)
	}
	if err := mgr.WaitConverged(ctx, site, "Ready", ready); err != nil {
		t.Fatal(err)
	}
	get(t, ns, "shop", &after)
	if len(after.Spec.Ports) != 2 || after.Spec.Ports[1].Name != "metrics" {
		t.Errorf("the Service's ports are %+v, want http and the metrics port someone added", after.Spec.Ports)
	}
	// Someone deletes it: created again.
	if err := c.Delete(ctx, &after); err != nil {
		t.Fatal(err)
	}
	again := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
	if err := env.WaitFor(ctx, again, "created again", func() bool { return again.UID != after.UID }); err != nil {
		t.Fatal(err)
	}
}

// TestABadHostnameStallsTheWebsiteAndWritesNoChild: a hostname that is no
// DNS name is a permanent error: Stalled with its reason, and no child
// written.
func TestABadHostnameStallsTheWebsiteAndWritesNoChild(t *testing.T) {
	t.Parallel()
	mgr, ns := start(t)
	ctx, c := t.Context(), env.Client(t)
	site := &webv1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: webv1.WebsiteSpec{Hostname: "Bad_Host"}}
	if err := c.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	if err := mgr.WaitConverged(ctx, site, "Stalled", func() bool {
		return testenv.HasCondition(site, "Stalled", metav1.ConditionTrue)
	}); err != nil {
		t.Fatal(err)
	}
	if c := findCondition(site, "Stalled"); c.Reason != children.ReasonInvalidHostname {
		t.Errorf("Stalled reason %q, want %q", c.Reason, children.ReasonInvalidHostname)
	}
	var services corev1.ServiceList
	if err := c.List(ctx, &services, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var configs corev1.ConfigMapList
	if err := c.List(ctx, &configs, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "bad"}); err != nil {
		t.Fatal(err)
	}
	if len(services.Items)+len(configs.Items) > 0 {
		t.Errorf("a Website with a bad hostname has %d Services and %d ConfigMaps, want none", len(services.Items), len(configs.Items))
	}
}

func findCondition(site *webv1.Website, conditionType string) metav1.Condition {
	for _, c := range site.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	return metav1.Condition{}
}
