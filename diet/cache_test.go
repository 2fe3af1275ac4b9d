package diet_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/diet"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
)

// TestCacheOptionsPutsEveryCacheOnTheDiet: the default transform, and every
// transform of base's own, run the diet last; base is not changed; what
// base's transforms do still happens first.
func TestCacheOptionsPutsEveryCacheOnTheDiet(t *testing.T) {
	var order []string
	mark := func(name string) func(any) (any, error) {
		return func(in any) (any, error) {
			order = append(order, name)
			in.(metav1.Object).SetAnnotations(map[string]string{"seen": name})
			return in, nil
		}
	}
	pods, err := diet.Fields(&corev1.Pod{}, "status.phase")
	if err != nil {
		t.Fatal(err)
	}
	base := cache.Options{
		DefaultTransform: mark("default"),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Transform: pods},
			&corev1.ConfigMap{}: {Transform: mark("configmaps")},
			&corev1.Secret{}:    {},
		},
		DefaultNamespaces: map[string]cache.Config{"a": {Transform: mark("namespace a")}, "b": {}},
	}
	before := len(base.ByObject)
	opts, err := diet.CacheOptions(base, owner)
	if err != nil {
		t.Fatal(err)
	}
	objWithEntries := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{
			entry("kubectl-create", update, creator), entry(owner, update, ours), status("kubelet", kubelet)}}}
	}
	run := func(name string, transform func(any) (any, error), wantManagers []string, wantOrder ...string) {
		t.Helper()
		order = nil
		if transform == nil {
			t.Fatalf("%s: no transform", name)
		}
		got, err := transform(objWithEntries())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantManagers, managers(got.(metav1.Object).GetManagedFields())); diff != "" {
			t.Errorf("%s: kept (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantOrder, order); diff != "" {
			t.Errorf("%s: base's transforms ran (-want +got):\n%s", name, diff)
		}
	}
	run("default", opts.DefaultTransform, []string{owner + "/Update"}, "default")
	for obj, bo := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Pod:
			run("Pods", bo.Transform, []string{diet.PartialManager + "/Update"})
		case *corev1.ConfigMap:
			run("ConfigMaps", bo.Transform, []string{owner + "/Update"}, "configmaps")
		case *corev1.Secret:
			if bo.Transform != nil {
				t.Error("Secrets got a transform of their own: they take the default")
			}
		}
	}
	run("namespace a", opts.DefaultNamespaces["a"].Transform, []string{owner + "/Update"}, "namespace a")
	if opts.DefaultNamespaces["b"].Transform != nil {
		t.Error("namespace b got a transform of its own: it takes the default")
	}
	if len(base.ByObject) != before || base.DefaultNamespaces["a"].Transform == nil {
		t.Error("base changed")
	}
	for obj, bo := range base.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); ok {
			order = nil
			if _, err := bo.Transform(objWithEntries()); err != nil || len(order) != 1 {
				t.Errorf("base's ConfigMap transform changed: ran %v, %v", order, err)
			}
		}
	}
}

// TestCacheOptionsNeedsTheFieldOwner returns the library's one error for
// it.
func TestCacheOptionsNeedsTheFieldOwner(t *testing.T) {
	if _, err := diet.CacheOptions(cache.Options{}, ""); !errors.Is(err, rkerrors.ErrNoFieldOwner) {
		t.Errorf("error %v, want errors.ErrNoFieldOwner", err)
	}
}
