package tracing_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/rest"

	"github.com/reconcilekit/reconcilekit/tracing"
)

// discard is a SpanExporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// cannedTransport answers every request with the same small JSON body,
// as an API server answers a patch.
type cannedTransport struct{ body string }

func (c cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(c.body)), Request: req}, nil
}

// BenchmarkTransport measures what Config's transport costs one request
// to the API server (a drift patch of a ConfigMap, sent within a traced
// reconcile, its response body read to the end as client-go does), in one
// run: the request through the transport beneath Config alone (the
// baseline), and through Config's with the SDK sampling every span into an
// exporter that drops them (tracing on). The difference is the cost of one
// client span.
func BenchmarkTransport(b *testing.B) {
	body := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"w-config","namespace":"ns","uid":"u","resourceVersion":"2"},"data":{"replicas":"1"}}`
	for _, bc := range []struct {
		name   string
		traced bool
	}{{"baseline-without-tracing", false}, {"on-100%-discarded", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
			ctx := context.Background()
			var rt http.RoundTripper = cannedTransport{body: body}
			if bc.traced {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(discard{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				rt = tracing.Config(cfg, tp).WrapTransport(rt)
				// A reconcile's span, as the Loop starts it, and drift's label.
				sctx, s := tp.Tracer("bench").Start(ctx, "reconcile Widget")
				b.Cleanup(func() { s.End() })
				ctx = tracing.Operation(sctx, "drift.Writer.Ensure",
					attribute.String("reconcilekit.drift.write", "patch"),
					attribute.StringSlice("reconcilekit.drift.paths", []string{"data.replicas"}))
			}
			url := "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps/w-config?fieldManager=tracing-test"
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, strings.NewReader(`{"data":{"replicas":"1"}}`))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/merge-patch+json")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadAll(resp.Body); err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
			reportCPU(b, start)
		})
	}
}

// reportCPU reports, as cpu-ns/op, the process's CPU time per iteration
// since start: on a shared machine, wall time per iteration (ns/op) counts
// the time the benchmark waited for a core, CPU time does not.
func reportCPU(b *testing.B, start time.Duration) {
	if start == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
