package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Attributes of a link from a reconcile to the change that woke it.
const (
	// LinkEventKey is the change: "create", "update", "delete" or
	// "generic".
	LinkEventKey = attribute.Key("reconcilekit.link.event")
	// LinkObjectKey names the object that changed: "Kind namespace/name"
	// ("namespace/name" when its kind is not set).
	LinkObjectKey = attribute.Key("reconcilekit.link.object")
)

// Predicate returns the event filter that links a parent's next reconcile
// to the change of its child that woke it: for each event it lets through
// (it drops none) of an object that carries an [Annotation], the reconcile
// of the object's controller (its controller owner reference, the owner
// Owns() enqueues) gets a span link to that trace context. Put it last
// among the filters of the Owns(), after those that drop events
// (controller-runtime asks them in order):
//
//	Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate(), tracer.Predicate()))
//
// A link is kept only for an owner t has traced before and whose UID the
// reference names, at most eight per owner until its reconcile, so the
// events of objects nobody traces cost a map look-up. With t nil or off it
// filters nothing and records nothing.
func (t *Tracer) Predicate() predicate.Predicate {
	if !t.Enabled() {
		return predicate.Funcs{}
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { t.wakeOwner(e.Object, "create"); return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { t.wakeOwner(e.ObjectNew, "update"); return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { t.wakeOwner(e.Object, "delete"); return true },
		GenericFunc: func(e event.GenericEvent) bool { t.wakeOwner(e.Object, "generic"); return true },
	}
}

// Handler returns h, linking the reconciles of the requests h enqueues for
// an event to the changed object's [Annotation]: for the watches whose
// handler maps an object to the objects that read it, such as package
// track's (track.Tracker.Enqueue) or handler.EnqueueRequestsFromMapFunc.
//
//	Watches(&corev1.Secret{}, tracer.Handler(refs.Enqueue(&corev1.Secret{})))
//
// A link is kept only for a request t has traced before. With t nil or off
// it returns h.
func (t *Tracer) Handler(h handler.EventHandler) handler.EventHandler {
	if !t.Enabled() {
		return h
	}
	return &linkingHandler{t: t, h: h}
}

// wakeOwner links the next reconcile of obj's controller to obj's trace
// context.
func (t *Tracer) wakeOwner(obj client.Object, ev string) {
	if obj == nil {
		return
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		sc, ok := spanContextOf(obj)
		if !ok {
			return
		}
		t.wake(types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, ref.UID, obj, sc, ev)
		return
	}
}

// wake adds a link to sc, the trace context of obj's change ev, to the
// next reconcile of key, when t traced it before (and its UID is uid, when
// given).
func (t *Tracer) wake(key types.NamespacedName, uid types.UID, obj client.Object, sc trace.SpanContext, ev string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.mem.peek(key)
	if e == nil || uid != "" && e.uid != uid {
		return
	}
	for _, l := range e.links {
		if l.SpanContext.Equal(sc) {
			return // the same change seen again (a resync)
		}
	}
	if len(e.links) == maxLinks {
		e.links = append(e.links[:0], e.links[1:]...)
	}
	name := obj.GetNamespace() + "/" + obj.GetName()
	if obj.GetNamespace() == "" {
		name = obj.GetName()
	}
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		name = kind + " " + name
	}
	e.links = append(e.links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkEventKey.String(ev), LinkObjectKey.String(name)}})
}

// linkingHandler is what Handler returns.
type linkingHandler struct {
	t *Tracer
	h handler.EventHandler
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (l *linkingHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	l.h.Create(ctx, e, l.queue(q, e.Object, "create"))
}

func (l *linkingHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	l.h.Update(ctx, e, l.queue(q, e.ObjectNew, "update"))
}

func (l *linkingHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	l.h.Delete(ctx, e, l.queue(q, e.Object, "delete"))
}

func (l *linkingHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	l.h.Generic(ctx, e, l.queue(q, e.Object, "generic"))
}

// queue returns q, or, when obj carries a trace context, q recording a
// link for each request added.
func (l *linkingHandler) queue(q queue, obj client.Object, ev string) queue {
	if obj == nil {
		return q
	}
	sc, ok := spanContextOf(obj)
	if !ok {
		return q
	}
	return &linkingQueue{TypedRateLimitingInterface: q, t: l.t, obj: obj, sc: sc, ev: ev}
}

// linkingQueue records a link for each request added.
type linkingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	t   *Tracer
	obj client.Object
	sc  trace.SpanContext
	ev  string
}

func (q *linkingQueue) Add(req reconcile.Request) {
	q.t.wake(req.NamespacedName, "", q.obj, q.sc, q.ev)
	q.TypedRateLimitingInterface.Add(req)
}

func (q *linkingQueue) AddAfter(req reconcile.Request, d time.Duration) {
	q.t.wake(req.NamespacedName, "", q.obj, q.sc, q.ev)
	q.TypedRateLimitingInterface.AddAfter(req, d)
}

func (q *linkingQueue) AddRateLimited(req reconcile.Request) {
	q.t.wake(req.NamespacedName, "", q.obj, q.sc, q.ev)
	q.TypedRateLimitingInterface.AddRateLimited(req)
}
