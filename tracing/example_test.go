package tracing_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/tracing"
)

// The trace context of a reconcile travels to the objects it writes in the
// annotation tracing.k8s.io/traceparent, and back from them into the
// reconciles their changes wake. drift writes it; Inject and Extract are
// for writes of your own.
func ExampleInject() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x37},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child"}}
	tracing.Inject(ctx, cm)
	fmt.Println(cm.Annotations[tracing.Annotation])

	parent := trace.SpanContextFromContext(tracing.Extract(context.Background(), cm))
	fmt.Println(parent.TraceID(), parent.SpanID(), parent.IsRemote())

	// A malformed annotation is ignored, never an error.
	cm.Annotations[tracing.Annotation] = "not a traceparent"
	fmt.Println(trace.SpanContextFromContext(tracing.Extract(context.Background(), cm)).IsValid())
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01
	// 4bf92f3577b34da6a3ce929d0e0e4737 00f067aa0ba902b7 true
	// false
}

// With no TracerProvider, a Tracer is off: every helper does nothing and a
// reconcile costs nothing more.
func ExampleNew() {
	tracer := tracing.New(nil)
	fmt.Println(tracer.Enabled(), tracer.Validate())
	// Output:
	// false <nil>
}
