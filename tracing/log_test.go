package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/tracing"
)

// logLines is a logger writing each line as JSON into lines, with its
// caller.
func logLines(lines *[]map[string]any) logr.Logger {
	return funcr.NewJSON(func(obj string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			panic(err)
		}
		*lines = append(*lines, m)
	}, funcr.Options{LogCaller: funcr.All, Verbosity: 1})
}

// TestEachLineTheReconcileLogsCarriesItsSpan: a line logged with the
// reconcile's logger, or with one derived from it (WithValues, WithName,
// V), carries the reconcile span's trace_id and span_id beside its own
// values, and names the line that logged it as its caller; without tracing
// the logger is the one given.
func TestEachLineTheReconcileLogsCarriesItsSpan(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Generation: 1}}
	req := crreconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}
	read := func(context.Context) (client.Object, error) { return pod, nil }
	_, file, _, _ := runtime.Caller(0)

	for _, tc := range []struct {
		name   string
		tracer *tracing.Tracer
	}{
		{name: "traced", tracer: tracing.New(tp)},
		{name: "tracing off", tracer: tracing.New(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []map[string]any
			ctx := log.IntoContext(t.Context(), logLines(&lines).WithValues("controller", "pods"))
			ctx, span := tc.tracer.Begin(ctx, req, read)
			logger := log.FromContext(ctx)
			logger.Info("plain", "k", "v")
			logger.WithValues("phase", "RUNNING").WithName("sync").V(1).Info("derived")
			logger.Error(errors.New("boom"), "failed")
			span.End(tracing.Outcome{})

			var want []map[string]any
			for _, l := range []map[string]any{
				{"msg": "plain", "k": "v", "level": 0.0, "logger": ""},
				{"msg": "derived", "phase": "RUNNING", "logger": "sync", "level": 1.0},
				{"msg": "failed", "error": "boom", "logger": ""},
			} {
				l["controller"] = "pods"
				if tc.tracer.Enabled() {
					sc := recorder.Ended()[len(recorder.Ended())-1].SpanContext()
					l["trace_id"], l["span_id"] = sc.TraceID().String(), sc.SpanID().String()
				}
				want = append(want, l)
			}
			var got []map[string]any
			for _, l := range lines {
				c, _ := l["caller"].(map[string]any)
				if f, _ := c["file"].(string); f != filepath.Base(file) {
					t.Errorf("line %q: caller %v, want this file (%s)", l["msg"], l["caller"], filepath.Base(file))
				}
				delete(l, "caller")
				got = append(got, l)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("lines logged (-want +got):\n%s", diff)
			}
		})
	}
}
