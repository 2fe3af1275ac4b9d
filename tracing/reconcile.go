package tracing

import (
	"context"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Attributes of a reconcile's span.
const (
	ObjectKindKey            = attribute.Key("reconcilekit.object.kind")
	ObjectNameKey            = attribute.Key("reconcilekit.object.name")
	ObjectUIDKey             = attribute.Key("reconcilekit.object.uid")
	ObjectGenerationKey      = attribute.Key("reconcilekit.object.generation")
	ObjectResourceVersionKey = attribute.Key("reconcilekit.object.resource_version")
	// DecisionClassKey is the errors.Class the reconcile's outcome was
	// decided by ("none" for success).
	DecisionClassKey = attribute.Key("reconcilekit.decision.class")
	// DecisionRequeueAfterKey is the requeue delay returned, in seconds.
	DecisionRequeueAfterKey = attribute.Key("reconcilekit.decision.requeue_after")
	// DecisionReasonKey is the outcome's reason: the error's
	// (errors.Reason), else the one Sync reported.
	DecisionReasonKey = attribute.Key("reconcilekit.decision.reason")
	// DecisionDoneKey is true when the reconcile found the object as
	// desired: the next reconcile of the same generation starts a trace of
	// its own.
	DecisionDoneKey = attribute.Key("reconcilekit.decision.done")
)

// Outcome is what a reconcile decided, as its span records it.
type Outcome struct {
	// Class is the class the outcome was decided by.
	Class errors.Class
	// RequeueAfter is the requeue delay returned.
	RequeueAfter time.Duration
	// Reason is the outcome's reason.
	Reason string
	// Err is the reconcile's error, nil for success.
	Err error
	// Done says the object is as desired (reconcile.Loop: Sync reported
	// Done or Failed without error, or the error was permanent): its
	// edit's trace ends, and the next reconcile of the same generation (a
	// resync, a child's change) starts one of its own.
	Done bool
}

// OutcomeOf is the Outcome of a reconcile that returned res and err: the
// class and reason of err, the requeue of res. Done is false: only the
// reconciler knows the object is as desired.
func OutcomeOf(res reconcile.Result, err error) Outcome {
	class, _ := errors.Classify(err)
	return Outcome{Class: class, RequeueAfter: res.RequeueAfter, Reason: errors.Reason(err), Err: err}
}

// Reconcile is the span of one reconcile, from [Tracer.Begin] to
// [Reconcile.End]. A nil Reconcile (tracing off) does nothing.
type Reconcile struct {
	t    *Tracer
	key  reconcile.Request
	uid  string
	span trace.Span
	// waits are those of the first read, before the span starts: one
	// allocation with the Reconcile.
	waits pending
}

// Options of every reconcile span, made once: an option built per
// reconcile is an allocation per reconcile.
var (
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	newRoot      = trace.WithNewRoot()
)

// Begin opens the span of the reconcile of req. read reads the object
// (from the cache, as the reconcile does anyway); Begin calls it, with a
// context in which a wait for the cache (package freshness) is recorded and
// given to the span, and takes from the object its UID, generation,
// resourceVersion and [Annotation]. A read that fails (the object is gone:
// what t remembers of it is forgotten) leaves the span with the request's
// key only. Run the reconcile with the returned context, whose logger
// carries the span's trace_id and span_id, and call [Reconcile.End] after.
//
// The span is the child of the trace the object's current edit belongs
// to: the one an earlier reconcile of the same generation began, unless
// that reconcile found the object done; else the trace of the object's
// [Annotation] (a user's, CI's, another controller's), unless a previous
// generation began with the same one; else a new trace. It is linked to the
// children whose changes woke it ([Tracer.Predicate], [Tracer.Handler]),
// and preceded by a span of the wait the previous reconcile left the object
// in ("wait requeue", "wait throttled", ...), the child of that
// reconcile's span.
//
// With t nil or off, Begin calls read with ctx and returns ctx and nil.
func (t *Tracer) Begin(ctx context.Context, req reconcile.Request, read func(context.Context) (client.Object, error)) (context.Context, *Reconcile) {
	return t.begin(ctx, req, "", read)
}

// begin is Begin; kind, when not empty, names the object's kind when the
// object read does not.
func (t *Tracer) begin(ctx context.Context, req reconcile.Request, kind string, read func(context.Context) (client.Object, error)) (context.Context, *Reconcile) {
	if !t.Enabled() {
		_, _ = read(ctx)
		return ctx, nil
	}
	r := &Reconcile{t: t, key: req}
	p := &r.waits
	p.t = t
	obj, err := read(context.WithValue(ctx, pendingKey{}, p))
	if err != nil || obj == nil || reflect.ValueOf(obj).IsNil() {
		obj = nil
	}

	var (
		parent, last trace.SpanContext
		links        []trace.Link
		wait         waiting
		newEdit      bool
		annotation   string
		start        = t.now()
	)
	if obj != nil {
		annotation = obj.GetAnnotations()[Annotation]
	}
	t.mu.Lock()
	e := t.mem.get(req.NamespacedName)
	if e != nil {
		last, links, wait = e.last, e.links, e.wait
		e.links, e.wait = nil, waiting{}
	}
	switch {
	case obj == nil:
		if e != nil {
			parent = e.anchor
		}
		if apierrors.IsNotFound(err) {
			t.mem.remove(req.NamespacedName)
		}
	case e != nil && e.uid == obj.GetUID() && e.generation == obj.GetGeneration() && e.anchor.IsValid():
		parent = e.anchor
	default:
		stale := e != nil && e.uid == obj.GetUID() && annotation == e.origin
		if sc, ok := spanContextOf(obj); ok && !stale {
			parent = sc
		}
		if e == nil || e.uid != obj.GetUID() {
			t.mem.remove(req.NamespacedName)
			if t.mem.byKey == nil {
				tracers.Add(t) // for the gauge of what the Tracers remember
			}
			e = t.mem.add(req.NamespacedName, t.maxObjects())
			e.uid = obj.GetUID()
		}
		e.generation, e.origin, e.anchor = obj.GetGeneration(), annotation, parent
		newEdit = true
	}
	t.mu.Unlock()

	if wait.kind != "" && last.IsValid() {
		attrs := []attribute.KeyValue{WaitKindKey.String(wait.kind)}
		if wait.planned > 0 {
			attrs = append(attrs, WaitPlannedKey.Float64(wait.planned.Seconds()))
		}
		if wait.reason != "" {
			attrs = append(attrs, WaitReasonKey.String(wait.reason))
		}
		_, ws := t.tracer.Start(trace.ContextWithSpanContext(ctx, last), "wait "+wait.kind,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(wait.since), trace.WithAttributes(attrs...))
		ws.End(trace.WithTimestamp(start))
	}

	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, ObjectNameKey.String(req.Name), semconv.K8SNamespaceName(req.Namespace))
	name := "reconcile"
	if obj != nil {
		if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
			kind = k
		}
		if kind != "" {
			name = t.spanName(kind)
			attrs = append(attrs, ObjectKindKey.String(kind))
		}
		r.uid = string(obj.GetUID())
		attrs = append(attrs,
			ObjectUIDKey.String(r.uid),
			ObjectGenerationKey.Int64(obj.GetGeneration()),
			ObjectResourceVersionKey.String(obj.GetResourceVersion()),
		)
	}
	opts := make([]trace.SpanStartOption, 0, 5)
	opts = append(opts, consumerKind, trace.WithAttributes(attrs...), trace.WithTimestamp(start))
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		opts = append(opts, newRoot)
	}
	ctx, r.span = t.tracer.Start(ctx, name, opts...)
	sc := r.span.SpanContext()
	if newEdit && !parent.IsValid() {
		// A new trace: its first reconcile is the parent of the others.
		t.mu.Lock()
		if e := t.mem.peek(req.NamespacedName); e != nil && string(e.uid) == r.uid {
			e.anchor = sc
		}
		t.mu.Unlock()
	}
	p.replay(ctx, t.tracer)
	if sc.IsValid() {
		ctx = log.IntoContext(ctx, withSpan(log.FromContext(ctx), sc))
	}
	return ctx, r
}

// End records o on the span and ends it, and remembers what the object now
// waits for. Calling it on a nil Reconcile does nothing.
func (r *Reconcile) End(o Outcome) {
	if r == nil {
		return
	}
	span := r.span
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, DecisionClassKey.String(o.Class.String()), DecisionDoneKey.Bool(o.Done))
	if o.RequeueAfter > 0 {
		attrs = append(attrs, DecisionRequeueAfterKey.Float64(o.RequeueAfter.Seconds()))
	}
	if o.Reason != "" {
		attrs = append(attrs, DecisionReasonKey.String(o.Reason))
	}
	if o.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(o.Class.String()))
		span.RecordError(o.Err)
		if o.Class != errors.ClassConflict && o.Class != errors.ClassCanceled {
			// A conflict is routine: a quiet retry, as controller-runtime
			// counts it.
			span.SetStatus(codes.Error, o.Err.Error())
		}
	}
	span.SetAttributes(attrs...)
	span.End()
	w := waitFor(o)
	w.since = r.t.now()
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	e := r.t.mem.peek(r.key.NamespacedName)
	if e == nil || string(e.uid) != r.uid {
		return
	}
	e.last, e.wait = span.SpanContext(), w
	if o.Done {
		e.anchor = trace.SpanContext{}
	}
}

// waitFor is the wait an outcome leaves its object in; kind "" for none.
func waitFor(o Outcome) waiting {
	w := waiting{planned: o.RequeueAfter}
	switch {
	case o.Class == errors.ClassPermanent || o.Class == errors.ClassCanceled:
	case o.Class == errors.ClassConflict:
		w.kind = "conflict"
	case o.Class == errors.ClassThrottled:
		w.kind, w.reason = "throttled", o.Reason
	case o.Err != nil:
		w.kind, w.reason = "backoff", o.Reason
	case o.RequeueAfter > 0:
		w.kind = "requeue"
	}
	if w.kind == "" {
		w.planned = 0
	}
	return w
}

// Reconciler returns r traced by t: each reconcile of an object of type T
// is read with reader (the manager's cached client; the cache's own object,
// not a copy) for [Tracer.Begin], runs r with the span's context, and is
// ended with [OutcomeOf] its result. It returns r itself when t is nil or
// off, so that tracing off costs nothing. A reconcile.Loop traces itself:
// give it the Tracer (its Tracer field) instead.
//
//	tracer := tracing.New(tp)
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Memcached{}).
//		Owns(&appsv1.Deployment{}, builder.WithPredicates(tracer.Predicate())).
//		Complete(tracing.Reconciler[*v1.Memcached](tracer, mgr.GetClient(), r))
func Reconciler[T client.Object](t *Tracer, reader client.Reader, r reconcile.Reconciler) reconcile.Reconciler {
	if !t.Enabled() {
		return r
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return r
	}
	var (
		once sync.Once
		kind string
	)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		once.Do(func() {
			if c, ok := reader.(client.Client); ok {
				if gvk, err := c.GroupVersionKindFor(reflect.New(typ.Elem()).Interface().(T)); err == nil {
					kind = gvk.Kind
				}
			}
		})
		ctx, span := t.begin(ctx, req, kind, func(ctx context.Context) (client.Object, error) {
			obj := reflect.New(typ.Elem()).Interface().(T)
			// Only looked at: the cache's own object, not a copy.
			if err := reader.Get(ctx, req.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			return obj, nil
		})
		res, err := r.Reconcile(ctx, req)
		span.End(OutcomeOf(res, err))
		return res, err
	})
}
