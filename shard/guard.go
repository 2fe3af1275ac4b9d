package shard

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// Guard returns r, reconciling only the objects of type T in ranges m
// holds: each request's object is read with reader (the manager's cached
// client) for its UID, the one thing Guard needs of it (metadata, which a
// cache diet keeps), without a copy of the cache's own; a request for an object of another replica's range
// is dropped, its holder reconciles it; the others run r under
// [Member.Enter], so that m gives up a range only after its reconciles have
// ended, and a reconcile's context ends if m loses the range or its Lease
// goes unrenewed past RenewDeadline. A request whose range is held but not
// confirmed ([ErrFenced]), and one whose reconcile's context so ended, is
// retried after RetryPeriod (and dropped then if the range has gone), so
// that a range kept through a short freeze loses no request.
//
// A request whose object reader does not have is dropped too: with a cache
// that follows m's ranges (follow.CacheOptions) it may be another replica's
// object, and r would act on it unfenced. What Guard drops while a range is
// not held (being acquired, or lost and acquired again) is handed over when
// it is: a following cache adds every object of the range anew. A sharded reconciler
// cleans up after a deleted object with a finalizer (it sees the deletion
// as an update of the object), never on NotFound.
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(ranges.Predicate(member))).
//		WatchesRawSource(member.Source(mgr.GetClient(), &v1.WidgetList{})).
//		Complete(shard.Guard[*v1.Widget](member, mgr.GetClient(), r))
func Guard[T client.Object](m *Member, reader client.Reader, r reconcile.Reconciler) reconcile.Reconciler {
	typ := reflect.TypeFor[T]().Elem()
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := reflect.New(typ).Interface().(T)
		// Only looked at (its UID): the cache's own object, not a copy.
		if err := reader.Get(ctx, req.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				log.FromContext(ctx).V(1).Info("not in this replica's cache: gone, or another replica's")
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
		_, _, retry := m.timings()
		wctx, done, err := m.Enter(ctx, obj)
		switch {
		case errors.Is(err, ErrFenced):
			// Held, but not renewed within RenewDeadline: ours again after
			// a renewal, or another replica's, which the retry finds out.
			log.FromContext(ctx).V(1).Info("the range's Lease is not confirmed; retrying after a renewal", "range", rangeOf(m, obj), "reason", err.Error())
			return reconcile.Result{RequeueAfter: retry}, nil
		case err != nil:
			log.FromContext(ctx).V(1).Info("not this replica's range", "range", rangeOf(m, obj))
			return reconcile.Result{}, nil
		}
		defer done()
		res, err := r.Reconcile(wctx, req)
		if wctx.Err() != nil && ctx.Err() == nil {
			// The range was lost, or its term ended, under the reconcile,
			// whose writes from then on were refused: what it returns says
			// nothing of the object. Retried as above.
			return reconcile.Result{RequeueAfter: retry}, nil
		}
		return res, err
	})
}

func rangeOf(m *Member, obj client.Object) string {
	if len(m.ranges) == 0 {
		return ""
	}
	i, _ := ranges.Of(obj, len(m.ranges))
	return m.ranges[i].String()
}

// Source returns a controller source that, whenever this replica acquires
// a range, enqueues every object of list's kind in that range, read with
// reader (the manager's cached client; their UIDs and keys are all it
// reads, without copies): the new holder reconciles at once
// what the previous one was reconciling, requeues included. Add it to the
// controller beside its For (WatchesRawSource).
func (m *Member) Source(reader client.Reader, list client.ObjectList) source.Source {
	ch := make(chan event.GenericEvent, 1024)
	m.onAcquire(func(ctx context.Context, r ranges.Range) {
		// Until the range is lost or given up: a stopped controller that
		// no longer reads the channel holds no goroutine.
		go func() {
			l := list.DeepCopyObject().(client.ObjectList)
			// Only looked at (the keys the handler enqueues): the cache's
			// own objects, not copies.
			if err := reader.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
				if ctx.Err() == nil {
					log.FromContext(ctx).Error(err, "listing the objects of an acquired range", "range", r.String())
				}
				return
			}
			_ = meta.EachListItem(l, func(o runtime.Object) error {
				obj, ok := o.(client.Object)
				if !ok || !r.Contains(obj) {
					return nil
				}
				select {
				case ch <- event.GenericEvent{Object: obj}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}()
	})
	return source.Channel(ch, &handler.EnqueueRequestForObject{})
}
