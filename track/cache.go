package track

import (
	"errors"
	"fmt"
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// CacheOptions returns base with the cache of each kind of objs set up for
// a kind watched only to wake referrers ([Tracker.Enqueue]): its informer
// keeps no managedFields, which the Tracker's handler never reads and which
// are often most of what a cached Secret or ConfigMap holds. Watch the kind
// metadata-only (builder.WatchesMetadata), and the cache holds its names
// and labels and nothing of its data; a [Tracker] reads the objects its
// referrers use through the API reader it was built with.
//
//	opts, err := track.CacheOptions(cache.Options{}, &corev1.Secret{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
//	err = ctrl.NewControllerManagedBy(mgr).For(&v1.SecretMirror{}).
//		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
//		Complete(r)
//
// base is not changed. What base already says of a kind is kept (its
// ByObject entry's selectors and namespaces), and so is its transform, or
// base.DefaultTransform when the entry has none (a ByObject transform
// replaces the default): it runs first, then managedFields are stripped. A
// kind is matched by its Go type, and an unstructured or metadata-only
// object by its GroupVersionKind; with base.Scheme set, by
// GroupVersionKind whatever its form, as the cache does.
//
// A cache without managedFields is no cache to write from: an operator that
// also writes objects of the kind with a drift.Writer reads them from the
// API server (client.CacheOptions.DisableFor, or drift.Writer.APIReader),
// as examples/secretmirror does for its copies. CacheOptions refuses no
// objs, and a nil one.
func CacheOptions(base cache.Options, objs ...client.Object) (cache.Options, error) {
	if len(objs) == 0 {
		return base, errors.New("track: no objects: name the kinds watched for references")
	}
	for i, obj := range objs {
		if obj == nil || reflect.ValueOf(obj).IsNil() {
			return base, fmt.Errorf("track: object %d of %d is nil", i+1, len(objs))
		}
	}
	opts := base
	opts.ByObject = maps.Clone(base.ByObject)
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, obj := range objs {
		key := obj
		for k := range opts.ByObject {
			if sameKind(k, obj, base) {
				key = k
				break
			}
		}
		entry := opts.ByObject[key]
		first := entry.Transform
		if first == nil {
			first = base.DefaultTransform
		}
		entry.Transform = stripManagedFieldsAfter(first)
		opts.ByObject[key] = entry
	}
	return opts, nil
}

// stripManagedFieldsAfter runs first, if any, then strips managedFields.
func stripManagedFieldsAfter(first toolscache.TransformFunc) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	if first == nil {
		return strip
	}
	return func(in any) (any, error) {
		out, err := first(in)
		if err != nil {
			return out, err
		}
		return strip(out)
	}
}

// sameKind reports whether a and b are the same kind for the cache.
func sameKind(a, b client.Object, base cache.Options) bool {
	if base.Scheme != nil {
		ga, errA := apiutil.GVKForObject(a, base.Scheme)
		gb, errB := apiutil.GVKForObject(b, base.Scheme)
		if errA == nil && errB == nil {
			return ga == gb
		}
	}
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch a.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return a.GetObjectKind().GroupVersionKind() == b.GetObjectKind().GroupVersionKind()
	}
	return true
}
