package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WrapCacheOptions returns opts with its NewInformer wrapped, so that the
// informers of the kinds of objs, in a cache built from them (a manager's,
// through ctrl.Options.Cache), list and watch with rs's ShardSelector
// ([WrapListerWatcher]): on a server that honours it, the cache holds, and
// the controller hears of, only the objects of rs. Informers of other kinds
// are left alone. An existing NewInformer is kept and called with the
// wrapped ListerWatcher.
//
//	opts, err := shard.WrapCacheOptions(cache.Options{}, shard.Ranges{rs[i]}, &v1.Widget{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// A kind is matched in the form the cache holds it, as controller-runtime
// keeps one informer per form: a typed object (&corev1.Pod{}) shards the
// typed informer; an unstructured.Unstructured or a
// metav1.PartialObjectMetadata, with its GroupVersionKind set, shards the
// unstructured or metadata-only informer of that kind.
//
// On a server that ignores the selector ([Detect]) the cache holds every
// object: add [Predicate] to the controller's watches. WrapCacheOptions
// refuses an empty rs (a list with no selector returns every object) and
// an empty objs (sharding every kind, Namespaces and Nodes included, is
// never what a controller means).
func WrapCacheOptions(opts cache.Options, rs Ranges, objs ...client.Object) (cache.Options, error) {
	if len(rs) == 0 {
		return opts, errors.New("shard: no ranges to cache: an informer without a ShardSelector would list every object")
	}
	if len(objs) == 0 {
		return opts, errors.New("shard: no objects: name the kinds whose informers list and watch by range")
	}
	kinds := make(map[informerKind]bool, len(objs))
	for _, obj := range objs {
		k, err := kindOf(obj)
		if err != nil {
			return opts, err
		}
		kinds[k] = true
	}
	next := opts.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if k, err := kindOf(obj); err == nil && kinds[k] {
			lw = WrapListerWatcher(lw, rs)
		}
		return next(lw, obj, resync, indexers)
	}
	return opts, nil
}

// informerKind tells controller-runtime's informers apart: the Go type of
// their objects, and for the unstructured and metadata-only forms, the
// GroupVersionKind they carry.
type informerKind struct {
	typ reflect.Type
	gvk schema.GroupVersionKind
}

func kindOf(obj runtime.Object) (informerKind, error) {
	k := informerKind{typ: reflect.TypeOf(obj)}
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		k.gvk = obj.GetObjectKind().GroupVersionKind()
		if k.gvk.Kind == "" || k.gvk.Version == "" {
			return k, fmt.Errorf("shard: a %T must have its GroupVersionKind set to name a kind", obj)
		}
	}
	return k, nil
}

// WrapListerWatcher returns a ListerWatcher that sends rs's [Ranges.Selector]
// as the ShardSelector of every list and watch of lw (watch-list streams
// included), for informers built with client-go directly. It keeps what lw
// says about watch-list support.
func WrapListerWatcher(lw toolscache.ListerWatcher, rs Ranges) toolscache.ListerWatcher {
	return &listerWatcher{inner: lw, lw: toolscache.ToListerWatcherWithContext(lw), selector: rs.Selector()}
}

// listerWatcher lists and watches as the one it wraps, with a selector.
type listerWatcher struct {
	inner    toolscache.ListerWatcher
	lw       toolscache.ListerWatcherWithContext
	selector string
}

var (
	_ toolscache.ListerWatcher            = (*listerWatcher)(nil)
	_ toolscache.ListerWatcherWithContext = (*listerWatcher)(nil)
)

func (l *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.ShardSelector = l.selector
	return l.lw.ListWithContext(ctx, opts)
}

func (l *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.ShardSelector = l.selector
	return l.lw.WatchWithContext(ctx, opts)
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says (client-go's reflector asks, to decide whether to stream lists).
func (l *listerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.inner)
}
