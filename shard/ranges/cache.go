package ranges

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/shard/internal/kind"
)

// CacheOptions returns base with its NewInformer wrapped, so that the
// informers of the kinds of objs, in a cache built from them (a manager's,
// through ctrl.Options.Cache), list and watch with rs's ShardSelector
// ([ListerWatcher]): on a server that honours it, the cache holds, and
// the controller hears of, only the objects of rs. Informers of other kinds
// are left alone. An existing NewInformer is kept and called with the
// wrapped ListerWatcher.
//
//	opts, err := ranges.CacheOptions(cache.Options{}, ranges.Set{rs[i]}, &v1.Widget{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// A kind is matched in the form the cache holds it, as controller-runtime
// keeps one informer per form: a typed object (&corev1.Pod{}) shards the
// typed informer; an unstructured.Unstructured or a
// metav1.PartialObjectMetadata, with its GroupVersionKind set, shards the
// unstructured or metadata-only informer of that kind.
//
// On a server that ignores the selector ([Detect]) the cache holds every
// object: add [Predicate] to the controller's watches. CacheOptions
// refuses an empty rs (a list with no selector returns every object) and
// an empty objs (sharding every kind, Namespaces and Nodes included, is
// never what a controller means).
func CacheOptions(base cache.Options, rs Set, objs ...client.Object) (cache.Options, error) {
	if len(rs) == 0 {
		return base, errors.New("shard: no ranges to cache: an informer without a ShardSelector would list every object")
	}
	if len(objs) == 0 {
		return base, errors.New("shard: no objects: name the kinds whose informers list and watch by range")
	}
	kinds := make(map[kind.Key]bool, len(objs))
	for _, obj := range objs {
		k, err := kind.Of(obj)
		if err != nil {
			return base, err
		}
		kinds[k] = true
	}
	next := base.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	base.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if k, err := kind.Of(obj); err == nil && kinds[k] {
			lw = ListerWatcher(lw, rs)
		}
		return next(lw, obj, resync, indexers)
	}
	return base, nil
}

// ListerWatcher returns a ListerWatcher that sends rs's [Set.Selector]
// as the ShardSelector of every list and watch of lw (watch-list streams
// included), for informers built with client-go directly. It keeps what lw
// says about watch-list support.
func ListerWatcher(lw toolscache.ListerWatcher, rs Set) toolscache.ListerWatcher {
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
