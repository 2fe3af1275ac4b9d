package track_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/track"
)

// withManagedFields is a Secret as the API server hands it out.
func withManagedFields() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
}

// TestCacheOptionsStripsManagedFieldsAndKeepsTheRest: each kind named gets
// a transform that strips managedFields, after what base already ran on
// it (its entry's transform, or the default one); base's selectors are
// kept and base itself is not changed; another kind is left alone.
func TestCacheOptionsStripsManagedFieldsAndKeepsTheRest(t *testing.T) {
	selector := labels.SelectorFromSet(labels.Set{"app": "x"})
	var ran []string
	mark := func(name string) func(any) (any, error) {
		return func(in any) (any, error) { ran = append(ran, name); return in, nil }
	}
	secretKey := &corev1.Secret{}
	base := cache.Options{
		DefaultTransform: mark("default"),
		ByObject: map[client.Object]cache.ByObject{
			secretKey:                {Label: selector, Transform: mark("secret's own")},
			&corev1.ConfigMap{}:      {Label: selector},
			&corev1.ServiceAccount{}: {Transform: mark("not tracked")},
		},
	}
	opts, err := track.CacheOptions(base, &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.PersistentVolumeClaim{})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.ByObject) != 3 || base.ByObject[secretKey].Transform == nil {
		t.Fatalf("base changed: %v", base.ByObject)
	}
	if len(opts.ByObject) != 4 {
		t.Fatalf("ByObject has %d entries, want 4 (the Secret's and the ConfigMap's kept, one for PersistentVolumeClaims, the ServiceAccount's): %v", len(opts.ByObject), opts.ByObject)
	}
	for key, entry := range opts.ByObject {
		ran = nil
		s := withManagedFields()
		if _, err := entry.Transform(s); err != nil {
			t.Fatal(err)
		}
		var want string
		switch key.(type) {
		case *corev1.Secret:
			want = "secret's own"
		case *corev1.ConfigMap, *corev1.PersistentVolumeClaim:
			want = "default"
		case *corev1.ServiceAccount:
			if s.ManagedFields == nil {
				t.Errorf("the ServiceAccount's transform, of a kind not named, strips managedFields")
			}
			continue
		}
		if s.ManagedFields != nil {
			t.Errorf("%T: managedFields kept: %v", key, s.ManagedFields)
		}
		if strings.Join(ran, ",") != want {
			t.Errorf("%T: ran %v before stripping, want %s", key, ran, want)
		}
		if _, isPVC := key.(*corev1.PersistentVolumeClaim); !isPVC && (entry.Label == nil || entry.Label.String() != selector.String()) {
			t.Errorf("%T: label selector %v, want base's %v", key, entry.Label, selector)
		}
	}
}

// TestCacheOptionsMatchesAKindInEveryForm: with base.Scheme, a
// metadata-only key of a kind is the kind of its typed key, as the cache
// keys them by GroupVersionKind; without it, typed and metadata-only keys
// are told apart, and unstructured ones by GroupVersionKind.
func TestCacheOptionsMatchesAKindInEveryForm(t *testing.T) {
	secretMeta := &metav1.PartialObjectMetadata{}
	secretMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	cmUnstructured := &unstructured.Unstructured{}
	cmUnstructured.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		scheme  *runtime.Scheme
		base    client.Object
		add     client.Object
		entries int
	}{
		{"typed and metadata-only, with a scheme", scheme, &corev1.Secret{}, secretMeta, 1},
		{"typed and metadata-only, without", nil, &corev1.Secret{}, secretMeta, 2},
		{"unstructured of the same kind", nil, cmUnstructured, cmUnstructured.DeepCopy(), 1},
		{"unstructured of another kind", nil, cmUnstructured, secretAsUnstructured(), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := cache.Options{Scheme: tt.scheme, ByObject: map[client.Object]cache.ByObject{tt.base: {}}}
			opts, err := track.CacheOptions(base, tt.add)
			if err != nil {
				t.Fatal(err)
			}
			if len(opts.ByObject) != tt.entries {
				t.Errorf("ByObject has %d entries, want %d", len(opts.ByObject), tt.entries)
			}
		})
	}
}

func secretAsUnstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return u
}

// TestCacheOptionsRefusesNoKindAndNil: no object, or a nil one, is an
// error, and base comes back as it was.
func TestCacheOptionsRefusesNoKindAndNil(t *testing.T) {
	for name, objs := range map[string][]client.Object{
		"none":      nil,
		"nil":       {nil},
		"typed nil": {(*corev1.Secret)(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := track.CacheOptions(cache.Options{}, objs...); err == nil {
				t.Errorf("CacheOptions(%v) = nil error", objs)
			}
		})
	}
}

// TestTheCacheOfATrackedKindHoldsNoManagedFields: on a real API server,
// a Secret watched metadata-only through a cache built with CacheOptions
// is cached without its managedFields (the server's copy has them), and
// base's label selector still decides which Secrets are cached.
func TestTheCacheOfATrackedKindHoldsNoManagedFields(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	opts, err := track.CacheOptions(cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{"app": "x"})},
	}}, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{Cache: opts}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	c := env.Client(t)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled", Labels: map[string]string{"app": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}},
	} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		if len(s.ManagedFields) == 0 {
			t.Fatalf("the API server's %s has no managedFields: nothing to strip", s.Name)
		}
	}
	cached := &metav1.PartialObjectMetadata{}
	cached.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := env.WaitFor(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled"}}, "cached", func() bool {
		return mgr.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: "labelled"}, cached) == nil
	}); err != nil {
		t.Fatal(err)
	}
	if cached.ManagedFields != nil {
		t.Errorf("the cached Secret keeps managedFields: %v", cached.ManagedFields)
	}
	var all metav1.PartialObjectMetadataList
	all.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := mgr.GetCache().List(ctx, &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 1 || all.Items[0].Name != "labelled" {
		t.Errorf("the cache holds %d Secrets (%v), want the labelled one: base's selector lost", len(all.Items), all.Items)
	}
}
