package ownership_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

var widgetKind = schema.GroupKind{Group: "testing.reconcilekit.io", Kind: "Widget"}

func TestSetLinkRoundTrips(t *testing.T) {
	scheme := testScheme(t)
	tests := []struct {
		name   string
		owner  client.Object
		obj    client.Object
		want   ownership.Link
		wantGK schema.GroupKind
	}{
		{"namespaced owner, child in another namespace", widget("a", "owner", "uid-1"), configMap("b", "child"),
			ownership.Link{APIVersion: "testing.reconcilekit.io/v1", Kind: "Widget", Namespace: "a", Name: "owner", UID: "uid-1"}, widgetKind},
		{"namespaced owner, cluster-scoped child", widget("a", "owner", "uid-1"), clusterRole("child"),
			ownership.Link{APIVersion: "testing.reconcilekit.io/v1", Kind: "Widget", Namespace: "a", Name: "owner", UID: "uid-1"}, widgetKind},
		{"core-group owner", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-ns"}}, clusterRole("child"),
			ownership.Link{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "uid-ns"}, schema.GroupKind{Kind: "Namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ownership.SetLink(tt.owner, tt.obj, scheme); err != nil {
				t.Fatal(err)
			}
			got, ok := ownership.LinkOf(tt.obj)
			if !ok {
				t.Fatalf("LinkOf found no link; annotations %v", tt.obj.GetAnnotations())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LinkOf (-want +got):\n%s", diff)
			}
			if got := tt.obj.GetLabels()[ownership.LinkLabel]; got != string(tt.want.UID) {
				t.Errorf("label %s = %q, want the owner's UID %q", ownership.LinkLabel, got, tt.want.UID)
			}
			if got.GroupKind() != tt.wantGK {
				t.Errorf("GroupKind = %v, want %v", got.GroupKind(), tt.wantGK)
			}
			if !ownership.IsLinkedTo(tt.obj, tt.owner) {
				t.Errorf("IsLinkedTo = false")
			}
			if ownership.IsLinkedTo(tt.obj, widget("a", "owner", "uid-other")) {
				t.Errorf("IsLinkedTo matched an owner with another UID")
			}
		})
	}
}

func TestSetLinkToAnotherOwnerIsAlreadyOwned(t *testing.T) {
	scheme := testScheme(t)
	obj := clusterRole("child")
	if err := ownership.SetLink(widget("a", "first", "uid-1"), obj, scheme); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopy()
	err := ownership.SetLink(widget("a", "second", "uid-2"), obj, scheme)
	var owned *ownership.AlreadyOwnedError
	if !errors.As(err, &owned) || owned.Owner.Name != "first" {
		t.Fatalf("SetLink = %v, want *AlreadyOwnedError naming %q", err, "first")
	}
	if diff := cmp.Diff(before, obj); diff != "" {
		t.Errorf("a failed SetLink changed the object (-want +got):\n%s", diff)
	}
	// The same owner, recreated with a new UID, takes the link over.
	if err := ownership.SetLink(widget("a", "first", "uid-3"), obj, scheme); err != nil {
		t.Fatalf("relinking to the recreated owner: %v", err)
	}
	if l, _ := ownership.LinkOf(obj); l.UID != "uid-3" {
		t.Errorf("link UID = %q, want uid-3", l.UID)
	}
	if err := ownership.SetLink(widget("a", "x", ""), clusterRole("y"), scheme); !errors.Is(err, ownership.ErrNoUID) {
		t.Errorf("SetLink with an owner without UID = %v, want ErrNoUID", err)
	}
}

func TestLinkOfRejectsMalformedAnnotations(t *testing.T) {
	for _, value := range []string{"", "Widget/ns/name", "a/b/c/d/e/f", "v1//ns/name", "v1/Kind/ns/", "/v1/Kind/ns/name"} {
		obj := configMap("ns", "child")
		obj.Annotations = map[string]string{ownership.LinkAnnotation: value}
		if l, ok := ownership.LinkOf(obj); ok {
			t.Errorf("LinkOf(%q) = %+v, true; want false", value, l)
		}
	}
}

// FuzzLinkOf checks that LinkOf never panics and that whatever it accepts
// is exactly what SetLink would write for that owner.
func FuzzLinkOf(f *testing.F) {
	for _, seed := range []string{"testing.reconcilekit.io/v1/Widget/ns/name", "v1/Namespace//team", "a/b/c/d/e", "////", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		obj := configMap("ns", "child")
		obj.Annotations = map[string]string{ownership.LinkAnnotation: value}
		l, ok := ownership.LinkOf(obj)
		if !ok {
			return
		}
		if got := strings.Join([]string{l.APIVersion, l.Kind, l.Namespace, l.Name}, "/"); got != value {
			t.Errorf("LinkOf(%q) = %+v, which writes back as %q", value, l, got)
		}
		if l.Kind == "" || l.Name == "" || l.APIVersion == "" {
			t.Errorf("LinkOf(%q) accepted empty fields: %+v", value, l)
		}
	})
}

func TestEnqueueLinkedOwner(t *testing.T) {
	scheme := testScheme(t)
	linked := func(owner client.Object, obj client.Object) client.Object {
		if err := ownership.SetLink(owner, obj, scheme); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	ownerA, ownerB := widget("a", "owner-a", "uid-a"), widget("b", "owner-b", "uid-b")
	reqA := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "owner-a"}}
	reqB := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: "owner-b"}}
	otherKind := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-ns"}}
	tests := []struct {
		name string
		send func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []reconcile.Request
	}{
		{"create of a linked child", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			ownership.EnqueueLinkedOwner(widgetKind).Create(ctx, event.CreateEvent{Object: linked(ownerA, configMap("x", "c"))}, q)
		}, []reconcile.Request{reqA}},
		{"delete of a linked cluster-scoped child", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			ownership.EnqueueLinkedOwner(widgetKind).Delete(ctx, event.DeleteEvent{Object: linked(ownerA, clusterRole("c"))}, q)
		}, []reconcile.Request{reqA}},
		{"update that moves the link enqueues both owners", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old := linked(ownerA, configMap("x", "c"))
			moved := configMap("x", "c")
			ownership.EnqueueLinkedOwner(widgetKind).Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: linked(ownerB, moved)}, q)
		}, []reconcile.Request{reqA, reqB}},
		{"child linked to an owner of another kind", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			ownership.EnqueueLinkedOwner(widgetKind).Create(ctx, event.CreateEvent{Object: linked(otherKind, clusterRole("c"))}, q)
		}, nil},
		{"unlinked child", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			ownership.EnqueueLinkedOwner(widgetKind).Generic(ctx, event.GenericEvent{Object: configMap("x", "c")}, q)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tt.send(t.Context(), q)
			var got []reconcile.Request
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r)
				q.Done(r)
			}
			slices.SortFunc(got, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinkedChildChangesReconcileTheOwner runs a real controller for Widgets
// that watches ConfigMaps in other namespaces and ClusterRoles through
// EnqueueLinkedOwner, and checks that creating, updating and deleting a
// linked child reconciles the owner. Its cache holds only the owner's
// namespace and the child's (and the ClusterRoles, cluster-scoped), so
// that it watches no other test's objects.
func TestLinkedChildChangesReconcileTheOwner(t *testing.T) {
	env.Require(t)
	ownerNS, childNS := env.Namespace(t), env.Namespace(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ownerNS: {}, childNS: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	requests := make(chan reconcile.Request, 100)
	if err := ctrl.NewControllerManagedBy(mgr).Named("linked").
		For(&testapi.Widget{}).
		Watches(&corev1.ConfigMap{}, ownership.EnqueueLinkedOwner(widgetKind)).
		Watches(&rbacv1.ClusterRole{}, ownership.EnqueueLinkedOwner(widgetKind)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req.Namespace == ownerNS {
				requests <- req
			}
			return reconcile.Result{}, nil
		})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c := env.Client(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ownerNS, Name: "owner"}}
	if err := c.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	want := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(owner)}
	expect := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-requests:
				if got == want {
					return
				}
			case <-deadline:
				t.Fatalf("no reconcile of the owner after %s", what)
			}
		}
	}
	drain := func() {
		time.Sleep(200 * time.Millisecond) // let queued events settle
		for len(requests) > 0 {
			<-requests
		}
	}
	expect("creating it")
	drain()

	cm := configMap(childNS, "child")
	if err := ownership.SetLink(owner, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	expect("creating a linked ConfigMap in another namespace")
	drain()
	cm.Data = map[string]string{"k": "v"}
	if err := c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	expect("updating the linked ConfigMap")
	drain()

	role := clusterRole("linked-" + ownerNS)
	if err := ownership.SetLink(owner, role, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	expect("creating a linked ClusterRole")
	drain()
	if err := c.Delete(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	expect("deleting the linked ClusterRole")
}
