package track

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Enqueue returns the event handler of a watch of the referenced kind, the
// kind of referenced (an empty object of it, such as &corev1.Secret{}): on
// every creation, change (a new resourceVersion) and deletion of an object
// of that kind, it forgets the Tracker's copy of the object and enqueues
// exactly the referrers whose last reconcile read it, and nothing for an
// object nobody reads. A resync that changes nothing enqueues nothing.
//
//	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
//	ctrl.NewControllerManagedBy(mgr).For(&v1.SecretMirror{}).
//		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{}))
//
// Watching metadata only is enough: the handler needs the object's name,
// and reads go through the Tracker's reader. Calling Enqueue is what makes
// the kind watched for the Tracker: a missing object of a watched kind is a
// permanent [*MissingError], and its copies are served. A type the scheme
// does not know makes the Tracker invalid ([Tracker.Validate]), and the
// handler enqueues nothing.
//
// The watch must see every object the reconciles read: a manager whose
// cache is limited to some namespaces (cache.Options.DefaultNamespaces, a
// label selector in ByObject) sends no event for an object outside them,
// so the Tracker would serve its copy, or leave its referrer Stalled, for
// good. Watch the namespaces the references may name, or read objects
// outside them with a Tracker that does not watch their kind (every read
// then goes to the API server, and a missing one is retried).
func (t *Tracker) Enqueue(referenced client.Object) handler.EventHandler {
	h := &enqueue{t: t}
	if t == nil {
		return h
	}
	var err error
	if t.scheme == nil {
		err = fmt.Errorf("%w: no scheme to name the kind of %T: build it with track.New(mgr.GetAPIReader(), mgr.GetScheme())", ErrInvalidTracker, referenced)
	} else if gvk, gerr := apiutil.GVKForObject(referenced, t.scheme); gerr != nil {
		err = fmt.Errorf("%w: Enqueue(%T): %w", ErrInvalidTracker, referenced, gerr)
	} else {
		h.kind = gvk.GroupKind()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.setup == nil {
			t.setup = errors.Permanent(err)
		}
		return h
	}
	if t.watched == nil {
		t.watched = map[schema.GroupKind]bool{}
	}
	t.watched[h.kind] = true
	return h
}

// enqueue is the handler Enqueue returns.
type enqueue struct {
	t    *Tracker
	kind schema.GroupKind // empty: the Tracker is invalid
}

var _ handler.EventHandler = (*enqueue)(nil)

// Create enqueues the referrers of an object that appeared.
func (e *enqueue) Create(_ context.Context, ev event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.changed(ev.Object, q)
}

// Update enqueues the referrers of an object whose resourceVersion changed.
func (e *enqueue) Update(_ context.Context, ev event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if ev.ObjectOld != nil && ev.ObjectNew != nil && ev.ObjectNew.GetResourceVersion() != "" &&
		ev.ObjectOld.GetResourceVersion() == ev.ObjectNew.GetResourceVersion() {
		return // a resync: nothing changed
	}
	e.changed(ev.ObjectNew, q)
}

// Delete enqueues the referrers of an object that went away.
func (e *enqueue) Delete(_ context.Context, ev event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.changed(ev.Object, q)
}

// Generic enqueues the referrers of the object.
func (e *enqueue) Generic(_ context.Context, ev event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.changed(ev.Object, q)
}

// changed forgets the copy of obj and enqueues its referrers.
func (e *enqueue) changed(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.t == nil || e.kind.Kind == "" || obj == nil {
		return
	}
	ref, err := e.t.referenceOf(obj, e.kind)
	if err != nil {
		return
	}
	e.t.mu.Lock()
	r := e.t.refs[ref]
	var reqs []reconcile.Request
	if r != nil {
		r.copy = nil
		r.events++
		reqs = make([]reconcile.Request, 0, len(r.referrers))
		for n := range r.referrers {
			reqs = append(reqs, reconcile.Request{NamespacedName: n})
		}
	}
	e.t.mu.Unlock()
	for _, req := range reqs {
		q.Add(req)
	}
}
