package controller_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/applyset"
	webappv1 "github.com/reconcilekit/reconcilekit/examples/webapp/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/webapp/internal/controller"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/requeue"
)

// fixture is the operator running under a manager of its own, in a
// namespace of its own.
type fixture struct {
	mgr *testenv.Manager
	c   client.Client // the test's: reads and writes the API server directly
	ns  string
}

// start runs the operator as main.go does, with a resync every syncPeriod
// (zero: controller-runtime's), and a failure reported on the WebApp's
// conditions after a second instead of ten, so that tests need not wait.
func start(t *testing.T, syncPeriod time.Duration, before ...func()) *fixture {
	t.Helper()
	env.Require(t)
	ns := env.Namespace(t)
	for _, f := range before {
		f()
	}
	var tracker freshness.Tracker
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: syncPeriod,
		Options: controller.ManagerOptions(manager.Options{}, &tracker)})
	if err != nil {
		t.Fatal(err)
	}
	r := controller.New(mgr.GetClient())
	r.Recorder = mgr.GetEventRecorder(controller.FieldOwner)
	r.Policy = &requeue.Policy{ReportAfter: time.Second}
	loop, err := r.Loop()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Watches(mgr).Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return &fixture{mgr: mgr, c: env.Client(t), ns: ns}
}

// create creates a WebApp named shop.
func (f *fixture) create(t *testing.T, spec webappv1.WebAppSpec) *webappv1.WebApp {
	t.Helper()
	app := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}, Spec: spec}
	if err := f.c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	return app
}

// ready waits until the WebApp is Ready at its generation.
func (f *fixture) ready(t *testing.T, app *webappv1.WebApp) {
	t.Helper()
	if err := f.mgr.WaitConverged(t.Context(), app, "Ready", func() bool {
		return testenv.HasCondition(app, "Ready", metav1.ConditionTrue)
	}); err != nil {
		t.Fatal(err)
	}
}

// edit changes the WebApp's spec.
func (f *fixture) edit(t *testing.T, app *webappv1.WebApp, change func(*webappv1.WebAppSpec)) {
	t.Helper()
	if err := f.c.Get(t.Context(), client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	before := app.DeepCopy()
	change(&app.Spec)
	if err := f.c.Patch(t.Context(), app, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// recorded returns the kinds the WebApp records as its set's.
func (f *fixture) recorded(t *testing.T, app *webappv1.WebApp) string {
	t.Helper()
	got := &webappv1.WebApp{}
	if err := f.c.Get(t.Context(), client.ObjectKeyFromObject(app), got); err != nil {
		t.Fatal(err)
	}
	return got.Annotations[applyset.GroupKindsAnnotation]
}

// exists reports whether the object is there (and not being deleted).
func (f *fixture) exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := f.c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetDeletionTimestamp() == nil
}

var spec = webappv1.WebAppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Port: 80, Config: map[string]string{"greeting": "hello"}}

// TestWebAppIsReadyOnceAvailableAndAResyncCostsNothing: a WebApp's
// ConfigMap, Deployment and Service are written as a set, recorded on the
// WebApp for kubectl, and the WebApp is Ready once kube-controller-manager
// and kwok have its Deployment available. A resync of the converged WebApp
// sends no request at all: no write, no read past the cache.
func TestWebAppIsReadyOnceAvailableAndAResyncCostsNothing(t *testing.T) {
	f := start(t, 2*time.Second)
	app := f.create(t, spec)
	f.ready(t, app)
	if got := f.recorded(t, app); got != "ConfigMap,Deployment.apps,Service" {
		t.Errorf("the WebApp records kinds %q", got)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}}
	if !f.exists(t, dep) || dep.Status.AvailableReplicas != 2 {
		t.Errorf("Ready with the Deployment %v available replicas", dep.Status.AvailableReplicas)
	}
	id := app.Labels[applyset.IDLabel]
	var cms corev1.ConfigMapList
	if err := f.c.List(t.Context(), &cms, client.InNamespace(f.ns), client.MatchingLabels{applyset.PartOfLabel: id}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 1 || cms.Items[0].Name != "shop-config" {
		t.Errorf("kubectl get -l %s=%s lists %d ConfigMaps", applyset.PartOfLabel, id, len(cms.Items))
	}

	f.mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(app)
	if err := f.mgr.Reconciles.Wait(t.Context(), key, f.mgr.Reconciles.Count(key)+1); err != nil {
		t.Fatal(err)
	}
	if reqs := f.mgr.Requests.Requests(); len(reqs) != 0 {
		t.Errorf("a resync of the converged WebApp sent %v", reqs)
	}
}

// TestFeaturesOnAndOff: turning the disruption budget on writes a
// PodDisruptionBudget and records its kind; turning it off deletes it, and
// only it: a ConfigMap another writer made with the set's labels copied
// onto it stays. The record then drops the kind.
func TestFeaturesOnAndOff(t *testing.T) {
	f := start(t, 0)
	withBudget := spec
	withBudget.DisruptionBudget = &webappv1.DisruptionBudget{MinAvailable: 1}
	app := f.create(t, withBudget)
	f.ready(t, app)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}}
	if !f.exists(t, pdb) {
		t.Fatal("no PodDisruptionBudget")
	}
	if got := f.recorded(t, app); got != "ConfigMap,Deployment.apps,PodDisruptionBudget.policy,Service" {
		t.Errorf("the WebApp records kinds %q", got)
	}
	// Another controller copies the labels of the WebApp's ConfigMap onto
	// one of its own (kro#1153).
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop-config"}}
	f.exists(t, ours)
	copied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "copied", Labels: ours.Labels}, Data: map[string]string{"k": "v"}}
	if err := f.c.Create(t.Context(), copied, client.FieldOwner("label-copier")); err != nil {
		t.Fatal(err)
	}

	f.edit(t, app, func(s *webappv1.WebAppSpec) { s.DisruptionBudget = nil })
	if err := env.WaitFor(t.Context(), app, "the PodDisruptionBudget's kind out of the record", func() bool {
		return !strings.Contains(app.Annotations[applyset.GroupKindsAnnotation], "PodDisruptionBudget") &&
			testenv.HasCondition(app, "Ready", metav1.ConditionTrue)
	}); err != nil {
		t.Fatal(err)
	}
	if f.exists(t, pdb) {
		t.Error("the PodDisruptionBudget is still there")
	}
	if !f.exists(t, copied) {
		t.Error("the ConfigMap that copied the set's labels was deleted")
	}
}

// TestADeletedDependencyIsWaitedFor: when someone deletes the ConfigMap,
// the operator writes it again, and the Deployment that mounts it waits
// for it (the WebApp says so, Reconciling, reason
// DeploymentWaitingForConfigMap) instead of being written in between; the
// WebApp is Ready again, with no write of the Deployment.
func TestADeletedDependencyIsWaitedFor(t *testing.T) {
	f := start(t, 0)
	app := f.create(t, spec)
	f.ready(t, app)
	reasons := f.watchReasons(t, app)
	f.mgr.Requests.Reset()
	if err := f.c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop-config"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitFor(t.Context(), app, "Ready after the ConfigMap came back", func() bool {
		return slices.Contains(reasons(), "DeploymentWaitingForConfigMap") && testenv.HasCondition(app, "Ready", metav1.ConditionTrue)
	}); err != nil {
		t.Fatalf("%v\nReconciling reasons seen: %v", err, reasons())
	}
	if !f.exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop-config"}}) {
		t.Error("the ConfigMap did not come back")
	}
	for _, r := range f.mgr.Requests.Writes() {
		if r.Resource.Resource == "deployments" {
			t.Errorf("the Deployment was written while its ConfigMap was missing: %v", r)
		}
	}
}

// watchReasons records the reasons of the WebApp's Reconciling=True
// conditions from now on, as a user watching it sees them.
func (f *fixture) watchReasons(t *testing.T, app *webappv1.WebApp) func() []string {
	t.Helper()
	w, err := env.Client(t).Watch(t.Context(), &webappv1.WebAppList{}, client.InNamespace(f.ns),
		client.MatchingFields{"metadata.name": app.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	seen := make(chan []string, 1)
	seen <- nil
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			got, ok := ev.Object.(*webappv1.WebApp)
			if !ok {
				continue
			}
			if c := meta.FindStatusCondition(got.Status.Conditions, "Reconciling"); c != nil && c.Status == metav1.ConditionTrue {
				s := <-seen
				seen <- append(s, c.Reason)
			}
		}
	}()
	return func() []string {
		s := <-seen
		seen <- s
		return slices.Clone(s)
	}
}

// TestMonitoringWaitsForItsKind: a WebApp that asks for monitoring while
// the ServiceMonitor kind is not installed is Reconciling, naming what it
// waits for, with no error and no retry loop; installing the kind wakes it,
// and the ServiceMonitor is written.
func TestMonitoringWaitsForItsKind(t *testing.T) {
	crd := serviceMonitorCRD(t)
	uninstall := func(ctx context.Context) {
		c := env.Client(t)
		if err := c.Delete(ctx, crd.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		gone := crd.DeepCopy()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(gone), gone)), nil
		}); err != nil {
			t.Fatalf("the ServiceMonitor kind is still installed: %v", err)
		}
	}
	uninstall(t.Context()) // a kind left by an earlier run (-count)
	f := start(t, 0, func() {
		// Registered before the manager's cleanup, so it runs after the
		// manager has stopped.
		t.Cleanup(func() { uninstall(context.Background()) })
	})
	monitored := spec
	monitored.Monitoring = &webappv1.Monitoring{Interval: "15s"}
	app := f.create(t, monitored)
	if err := env.WaitFor(t.Context(), app, "Reconciling, waiting for the ServiceMonitor kind", func() bool {
		c := meta.FindStatusCondition(app.Status.Conditions, "Reconciling")
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ServiceMonitorKindNotInstalled" &&
			strings.Contains(c.Message, "ServiceMonitor "+f.ns+"/shop: waits for kind ServiceMonitor.monitoring.coreos.com")
	}); err != nil {
		t.Fatal(err)
	}
	// It waits without a retry loop: no reconcile runs while nothing changes.
	key := client.ObjectKeyFromObject(app)
	if err := f.mgr.WaitConverged(t.Context(), app, "waiting for the kind, no reconcile running", func() bool {
		c := meta.FindStatusCondition(app.Status.Conditions, "Reconciling")
		return c != nil && c.Reason == "ServiceMonitorKindNotInstalled"
	}); err != nil {
		t.Fatal(err)
	}
	before := f.mgr.Reconciles.Count(key)
	time.Sleep(3 * time.Second)
	if n := f.mgr.Reconciles.Count(key) - before; n != 0 {
		t.Errorf("%d reconciles in 3 s of waiting for the kind; want none", n)
	}

	if err := f.c.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	f.ready(t, app)
	sm := &unstructured.Unstructured{}
	sm.SetAPIVersion("monitoring.coreos.com/v1")
	sm.SetKind("ServiceMonitor")
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "shop"}, sm); err != nil {
		t.Fatalf("no ServiceMonitor once its kind is installed: %v", err)
	}
	if got, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(got) != 1 {
		t.Errorf("the ServiceMonitor's endpoints: %v", got)
	}
}

func serviceMonitorCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("../../testdata/servicemonitor-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestARefusedDeleteIsNamedAndRetried: a PodDisruptionBudget a policy
// protects (the test's validating webhook refuses its delete) stays when
// the budget is turned off; the WebApp's conditions name it and the
// webhook's answer, and it stays in the record. Once the protection is
// lifted, the operator deletes it (the label's removal wakes the WebApp).
func TestARefusedDeleteIsNamedAndRetried(t *testing.T) {
	f := start(t, 0)
	withBudget := spec
	withBudget.DisruptionBudget = &webappv1.DisruptionBudget{MinAvailable: 1}
	app := f.create(t, withBudget)
	f.ready(t, app)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}}
	protect := func(on bool) {
		t.Helper()
		value := `"true"`
		if !on {
			value = "null"
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+ProtectedLabel+`":`+value+`}}}`))
		if err := f.c.Patch(t.Context(), pdb, patch, client.FieldOwner("policy-admin")); err != nil {
			t.Fatal(err)
		}
	}
	protect(true)

	f.edit(t, app, func(s *webappv1.WebAppSpec) { s.DisruptionBudget = nil })
	if err := env.WaitFor(t.Context(), app, "Reconciling, the refused delete named", func() bool {
		c := meta.FindStatusCondition(app.Status.Conditions, "Reconciling")
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == applyset.ReasonPruneFailed &&
			strings.Contains(c.Message, "PodDisruptionBudget.policy "+f.ns+"/shop") && strings.Contains(c.Message, "is protected")
	}); err != nil {
		t.Fatal(err)
	}
	if !f.exists(t, pdb) {
		t.Fatal("the protected PodDisruptionBudget is gone")
	}
	if got := f.recorded(t, app); !strings.Contains(got, "PodDisruptionBudget.policy") {
		t.Errorf("the WebApp no longer records the kind of the PodDisruptionBudget it could not delete: %q", got)
	}

	protect(false)
	if err := env.WaitFor(t.Context(), app, "Ready once the budget could go", func() bool {
		return testenv.HasCondition(app, "Ready", metav1.ConditionTrue) &&
			!strings.Contains(app.Annotations[applyset.GroupKindsAnnotation], "PodDisruptionBudget")
	}); err != nil {
		t.Fatal(err)
	}
	if f.exists(t, pdb) {
		t.Error("the PodDisruptionBudget is still there")
	}
}

// TestSomeoneElsesDriftIsCorrectedAndReported: a kubectl edit of the
// Deployment's replicas is put back in one patch, and the WebApp gets a
// DriftCorrected event naming the field and who changed it.
func TestSomeoneElsesDriftIsCorrectedAndReported(t *testing.T) {
	f := start(t, 0)
	app := f.create(t, spec)
	f.ready(t, app)
	f.mgr.Requests.Reset()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}}
	if err := f.c.Patch(t.Context(), dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)),
		client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	var events eventsv1.EventList
	if err := env.WaitFor(t.Context(), dep, "replicas put back, and the event", func() bool {
		if err := f.c.List(t.Context(), &events, client.InNamespace(f.ns)); err != nil {
			return false
		}
		return ptr.Deref(dep.Spec.Replicas, 0) == 2 && slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Reason == applyset.ReasonDriftCorrected
		})
	}); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason != applyset.ReasonDriftCorrected {
			continue
		}
		if e.Regarding.Kind != "WebApp" || e.Note != "Deployment "+f.ns+"/shop: spec.replicas changed by kubectl-edit; put back" {
			t.Errorf("the event is on %s %s: %q", e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	patches := 0
	for _, r := range f.mgr.Requests.Writes() {
		if r.Resource.Resource == "deployments" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d writes of the Deployment; want the one patch that put it back", patches)
	}
}
