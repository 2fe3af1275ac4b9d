package ownership_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// family creates, in ns, an owner and another Widget, and ConfigMaps: two
// controlled by the owner, one controlled by the other Widget, one with a
// plain (non-controller) owner reference to the owner, one with no owner.
func family(t *testing.T, c client.Client, ns string) (owner, other *testapi.Widget) {
	t.Helper()
	ctx := t.Context()
	owner = &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	other = &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}}
	for _, w := range []*testapi.Widget{owner, other} {
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	children := []struct {
		name string
		set  func(cm *corev1.ConfigMap) error
	}{
		{"owned-1", func(cm *corev1.ConfigMap) error { return ownership.SetController(owner, cm, env.Scheme) }},
		{"owned-2", func(cm *corev1.ConfigMap) error { return ownership.SetController(owner, cm, env.Scheme) }},
		{"controlled-by-other", func(cm *corev1.ConfigMap) error { return ownership.SetController(other, cm, env.Scheme) }},
		{"plain-owner-ref", func(cm *corev1.ConfigMap) error { return ownership.SetOwner(owner, cm, env.Scheme) }},
		{"unowned", func(*corev1.ConfigMap) error { return nil }},
	}
	for _, child := range children {
		cm := configMap(ns, child.name)
		if err := child.set(cm); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	return owner, other
}

func names(list *corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	slices.Sort(out)
	return out
}

// cachedClient starts an informer cache for ns with the IndexOwner index on
// ConfigMaps, as a manager would, and returns a client reading from it.
func cachedClient(t *testing.T, ns string) client.Client {
	t.Helper()
	env.Require(t)
	return cachedClientFor(t, env.Config, true, ns)
}

// cachedClientFor starts an informer cache of namespaces on cfg, with the
// IndexOwner index on ConfigMaps when index is true, and returns a client
// that reads from it and writes through cfg, as a manager's client does.
func cachedClientFor(t *testing.T, cfg *rest.Config, index bool, namespaces ...string) client.Client {
	t.Helper()
	byNamespace := map[string]cache.Config{}
	for _, ns := range namespaces {
		byNamespace[ns] = cache.Config{}
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme, DefaultNamespaces: byNamespace})
	if err != nil {
		t.Fatal(err)
	}
	if index {
		if err := ownership.IndexOwner(t.Context(), informers, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("IndexOwner: %v", err)
		}
	} else if _, err := informers.GetInformer(t.Context(), &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- informers.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestListOwnedFindsExactlyTheControlledChildrenThroughTheIndex(t *testing.T) {
	direct := env.Client(t)
	ns := env.Namespace(t)
	cached := cachedClient(t, ns)
	owner, other := family(t, direct, ns)

	for _, tc := range []struct {
		owner *testapi.Widget
		want  []string
	}{
		{owner, []string{"owned-1", "owned-2"}},
		{other, []string{"controlled-by-other"}},
	} {
		var got []string
		// The cache catches up with the creates asynchronously.
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			list := &corev1.ConfigMapList{}
			if err := ownership.ListOwned(ctx, cached, tc.owner, list); err != nil {
				return false, err
			}
			got = names(list)
			return slices.Equal(got, tc.want), nil
		})
		if err != nil {
			t.Errorf("ListOwned(%s) = %v, want %v: %v", tc.owner.Name, got, tc.want, err)
		}
	}

	// The index lives in the cache: the API server cannot filter on it.
	if err := ownership.ListOwned(t.Context(), direct, owner, &corev1.ConfigMapList{}); err == nil {
		t.Errorf("ListOwned through an uncached client succeeded; want the server's error for an unknown field selector")
	}
}

func TestListLinkedFindsChildrenInOtherNamespacesAndClusterScope(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ownerNS := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ownerNS, Name: "owner"}}
	other := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ownerNS, Name: "other"}}
	for _, w := range []*testapi.Widget{owner, other} {
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	var wantCMs []string
	for i, ns := range []string{env.Namespace(t), env.Namespace(t)} {
		for _, linkTo := range []*testapi.Widget{owner, other} {
			cm := configMap(ns, linkTo.Name+"-"+string(rune('a'+i)))
			if err := ownership.SetLink(linkTo, cm, env.Scheme); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			if linkTo == owner {
				wantCMs = append(wantCMs, cm.Name)
			}
		}
	}
	role := clusterRole("linked-" + ownerNS)
	if err := ownership.SetLink(owner, role, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, role); err != nil {
		t.Fatal(err)
	}

	cms := &corev1.ConfigMapList{}
	if err := ownership.ListLinked(ctx, c, owner, cms); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantCMs, names(cms)); diff != "" {
		t.Errorf("linked ConfigMaps (-want +got):\n%s", diff)
	}
	roles := &rbacv1.ClusterRoleList{}
	if err := ownership.ListLinked(ctx, c, owner, roles); err != nil {
		t.Fatal(err)
	}
	if len(roles.Items) != 1 || roles.Items[0].Name != role.Name {
		t.Errorf("linked ClusterRoles = %d items, want exactly %q", len(roles.Items), role.Name)
	}
}
