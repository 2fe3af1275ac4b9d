package applyset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

// TestDependentWaitsUntilItsDependencyIsHealthy proves that a child that
// needs another is not written until that one is healthy by its own
// Health: no write, no error; the set's health says what it waits for; and
// once the dependency is Ready (its status written by its controller, here
// the test) the next Apply writes the dependent. A dependency written by an
// Apply is waited for in that Apply: its status says nothing of the write
// yet.
func TestDependentWaitsUntilItsDependencyIsHealthy(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	db := func() *testapi.Widget {
		return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: testapi.WidgetSpec{Message: "postgres"}}
	}
	app := func() *corev1.ConfigMap { return configMap(ns, "app", "uses db") }
	desired := func() []applyset.Child {
		d := db()
		return []applyset.Child{{Object: app(), DependsOn: []client.Object{d}}, {Object: d}}
	}

	res, err := set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"parent patch", "create Widget.testing.reconcilekit.io " + ns + "/db", "wait ConfigMap " + ns + "/app"}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("first Apply (-want +got):\n%s", diff)
	}
	if h := res.Children[1].Health; h.Status != health.InProgress || h.Reason != "WaitingForWidget" ||
		h.Message != "waits for Widget "+ns+"/db: written by this reconcile, not yet observed" {
		t.Errorf("the ConfigMap's health is %v, want it waiting for the Widget just written", h)
	}

	// The Widget has no status yet: InProgress (NoStatus), so the
	// ConfigMap still waits, and nothing is written.
	reqs.Reset()
	res, err = set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"parent unchanged", "unchanged Widget.testing.reconcilekit.io " + ns + "/db", "wait ConfigMap " + ns + "/app"}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("Apply while the Widget is not Ready (-want +got):\n%s", diff)
	}
	if h := res.Children[1].Health; h.Reason != "WaitingForWidget" || !strings.HasPrefix(h.Message, "waits for Widget "+ns+"/db: NoStatus: ") {
		t.Errorf("the ConfigMap's health is %v, want it waiting for the Widget's status", h)
	}
	// The parent names the first child that is not ready: the Widget,
	// what the ConfigMap waits for.
	if reason, msg := res.Health().ParentCondition(); reason != "WidgetNoStatus" || !strings.HasPrefix(msg, "Widget "+ns+"/db: ") {
		t.Errorf("the parent's condition would say %s: %q", reason, msg)
	}
	if w := writesOf(reqs.Counts()); len(w) != 0 {
		t.Errorf("a waiting Apply wrote %v", w)
	}

	// Its controller makes it Ready.
	w := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db"}, w); err != nil {
		t.Fatal(err)
	}
	w.Status.ObservedGeneration = w.Generation
	status.MarkReady(w, "Up", "accepting connections")
	if err := c.Status().Update(t.Context(), w, client.FieldOwner("widget-controller")); err != nil {
		t.Fatal(err)
	}
	res, err = set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"parent unchanged", "unchanged Widget.testing.reconcilekit.io " + ns + "/db", "create ConfigMap " + ns + "/app"}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("Apply once the Widget is Ready (-want +got):\n%s", diff)
	}
	if h := res.Health(); h.Status != health.Current {
		t.Errorf("the set's health is %v, want Current", h)
	}
}

// TestHealthFuncDecidesReadiness proves an operator's own HealthFunc
// decides when a dependency is ready: a Secret the set writes empty waits
// for another writer to fill in its password.
func TestHealthFuncDecidesReadiness(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	filled := func(obj client.Object) (health.Health, error) {
		if len(obj.(*corev1.Secret).Data["password"]) == 0 {
			return health.Health{Status: health.InProgress, Reason: "NoPassword", Message: "waiting for the password"}, nil
		}
		return health.Health{Status: health.Current}, nil
	}
	desired := func() []applyset.Child {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, StringData: nil, Type: corev1.SecretTypeOpaque}
		return []applyset.Child{{Object: secret, Health: filled}, {Object: configMap(ns, "app", "1"), DependsOn: []client.Object{secret}}}
	}
	if _, err := set.Apply(t.Context(), parent, desired()); err != nil {
		t.Fatal(err)
	}
	res, err := set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Children[1]; got.Action != applyset.ActionWait || got.Health.Message != "waits for Secret "+ns+"/creds: NoPassword: waiting for the password" {
		t.Errorf("the ConfigMap: %v, want it waiting for the password", got)
	}
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "creds"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"password": []byte("s3cret")}
	if err := c.Update(t.Context(), secret, client.FieldOwner("password-generator")); err != nil {
		t.Fatal(err)
	}
	res, err = set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Children[1].Action; got != applyset.ActionCreate {
		t.Errorf("the ConfigMap once the password is there: %s, want create", got)
	}
}

// TestKindNotInstalledWaits proves a child whose kind has no
// CustomResourceDefinition yet waits without an error or a write, its
// parent is woken by EnqueueWaiting when the CRD appears, and the child is
// then written.
func TestKindNotInstalledWaits(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	// A group of the test's own: the CRD outlives the test.
	group := strings.ReplaceAll(ns, "-", "") + ".gadgets.test"
	gadget := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/v1")
		u.SetKind("Gadget")
		u.SetNamespace(ns)
		u.SetName("g")
		_ = unstructured.SetNestedField(u.Object, "blue", "spec", "color")
		return u
	}
	desired := func() []applyset.Child {
		return []applyset.Child{{Object: configMap(ns, "app", "1")}, {Object: gadget(), Health: applyset.Exists}}
	}
	reqs.Reset()
	res, err := set.Apply(t.Context(), parent, desired())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"parent patch", "create ConfigMap " + ns + "/app", "wait Gadget." + group + " " + ns + "/g"}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("Apply without the CRD (-want +got):\n%s", diff)
	}
	if h := res.Health(); h.Reason != "KindNotInstalled" {
		t.Errorf("the set's health is %v, want the Gadget waiting for its kind", h)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1, "create": 1}, writesOf(reqs.Counts())); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(parent), got); err != nil {
		t.Fatal(err)
	}
	if k := got.Annotations[applyset.GroupKindsAnnotation]; k != "ConfigMap" {
		t.Errorf("the parent records kinds %q; a kind not installed has no member to record", k)
	}

	// The CRD appears: its events wake exactly the waiting parent, each of
	// them (a burst of events before the reconcile runs loses none).
	crd := gadgetCRD(group)
	if err := c.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := enqueued(t, set, crd); !cmp.Equal(got, []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(parent)}}) {
			t.Errorf("the CRD's event enqueued %v, want the parent", got)
		}
	}
	// Established takes a moment; until then the Gadget still waits.
	err = wait.PollUntilContextTimeout(t.Context(), 100*1e6, 30*1e9, true, func(ctx context.Context) (bool, error) {
		res, err = set.Apply(ctx, parent, desired())
		return err == nil && res.Children[1].Action == applyset.ActionCreate, err
	})
	if err != nil {
		t.Fatalf("the Gadget was not created once its CRD was there: %v\n%s", err, res)
	}
}

// enqueued returns what the handler enqueues for a create event of obj.
func enqueued(t *testing.T, set *applyset.Set, obj client.Object) []reconcile.Request {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	set.EnqueueWaiting().Create(t.Context(), event.CreateEvent{Object: obj}, q)
	var out []reconcile.Request
	for q.Len() > 0 {
		r, _ := q.Get()
		out = append(out, r)
		q.Done(r)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
