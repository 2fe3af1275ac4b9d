package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/tracing"
)

// BenchmarkReconcile measures what tracing costs a reconcile.Loop's
// reconcile of a converged Widget (a read, Sync, no write), in one run:
// the Loop without a Tracer (the baseline), with a Tracer without a
// TracerProvider (tracing off: the goal is no allocation more), and with
// the SDK sampling every span into an in-memory exporter (tracing on).
// The writes' client spans (Config) are not in it: a fake client sends no
// request.
func BenchmarkReconcile(b *testing.B) {
	for _, bc := range []struct {
		name   string
		tracer func(b *testing.B) *tracing.Tracer
	}{
		{"baseline-without-tracing", func(*testing.B) *tracing.Tracer { return nil }},
		{"off", func(*testing.B) *tracing.Tracer { return tracing.New(nil) }},
		{"on-100%-in-memory", func(b *testing.B) *tracing.Tracer {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(exp))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return tracing.New(tp)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Generation: 1, UID: "u"}}
			status.MarkReady(w, "Configured", "")
			status.ObserveGeneration(w)
			c := fake.NewClientBuilder().WithScheme(env.Scheme).WithObjects(w).WithStatusSubresource(w).Build()
			loop := reconcile.New(c, fieldOwner, func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
				return reconcile.Progress{Reason: "Configured"}, nil
			})
			loop.Tracer = bc.tracer(b)
			req := crreconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w"}}
			ctx := context.Background()
			if _, err := loop.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if _, err := loop.Reconcile(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}
