package tracing

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation is the annotation that carries an object's trace context
// (KEP-5915): the W3C traceparent of the span that last wrote the object's
// desired state, such as "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01".
// Package drift writes it on every object it creates, patches or applies
// within a traced reconcile, in the write it sends anyway; it is never
// drift (package compare ignores it, also where our field manager owns
// it). A user, a CI job or another controller may set it too: the
// reconciles of the object then join that trace.
const Annotation = "tracing.k8s.io/traceparent"

// traceContext is the one propagator of the package: W3C trace context,
// on requests (the traceparent header, which kube-apiserver reads) and in
// the annotation.
var traceContext = propagation.TraceContext{}

// annotationCarrier reads and writes the annotation as a TextMapCarrier.
type annotationCarrier struct{ value *string }

func (c annotationCarrier) Get(key string) string {
	if key == "traceparent" {
		return *c.value
	}
	return ""
}

func (c annotationCarrier) Set(key, value string) {
	if key == "traceparent" {
		*c.value = value
	}
}

func (c annotationCarrier) Keys() []string { return []string{"traceparent"} }

// Inject sets obj's [Annotation] to the trace context of the span in ctx,
// and reports whether it did: not when ctx carries no valid span context
// (tracing off). The annotations map is copied before it is changed, so a
// map obj shares with another object is left alone. Package drift calls it
// on the objects it writes; call it on an object your reconcile creates or
// whose spec it changes with a client of its own, never on a status write.
func Inject(ctx context.Context, obj metav1.Object) bool {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || obj == nil {
		return false
	}
	var v string
	traceContext.Inject(ctx, annotationCarrier{&v})
	if v == "" || obj.GetAnnotations()[Annotation] == v {
		return v != ""
	}
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = make(map[string]string, 1)
	}
	a[Annotation] = v
	obj.SetAnnotations(a)
	return true
}

// Extract returns ctx carrying obj's [Annotation] as a remote span context,
// the parent of what is started with it; ctx itself when obj has no such
// annotation or one that is not a valid W3C traceparent (it is ignored,
// never an error).
func Extract(ctx context.Context, obj metav1.Object) context.Context {
	sc, ok := spanContextOf(obj)
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// spanContextOf parses obj's annotation.
func spanContextOf(obj metav1.Object) (trace.SpanContext, bool) {
	if obj == nil {
		return trace.SpanContext{}, false
	}
	v, ok := obj.GetAnnotations()[Annotation]
	if !ok || v == "" {
		return trace.SpanContext{}, false
	}
	sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), annotationCarrier{&v}))
	return sc, sc.IsValid()
}
