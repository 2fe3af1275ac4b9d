package otlphttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/otlphttp"
	"github.com/reconcilekit/reconcilekit/internal/otlptest"
)

// spans records a small trace with the SDK: a root, a child with an
// event, an error and every kind of attribute, and a span linked to the
// root.
func spans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "at-operator"))))
	tr := tp.Tracer("github.com/reconcilekit/reconcilekit/tracing")
	ctx, root := tr.Start(t.Context(), "reconcile At", trace.WithSpanKind(trace.SpanKindConsumer))
	_, child := tr.Start(ctx, "PATCH /apis/cnat.reconcilekit.dev/v1alpha1/namespaces/{namespace}/ats/{name}/status",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("http.request.method", "PATCH"),
			attribute.Int("http.response.status_code", 429),
			attribute.Bool("b", true),
			attribute.Float64("f", 1.5),
			attribute.StringSlice("reconcilekit.drift.paths", []string{".spec.a", ".spec.b"}),
			attribute.Int64Slice("is", []int64{1, 2}),
		))
	child.AddEvent("Retry-After")
	child.SetStatus(codes.Error, "throttled")
	child.End()
	root.End()
	_, linked := tr.Start(t.Context(), "reconcile Pod", trace.WithLinks(trace.Link{SpanContext: root.SpanContext()}))
	linked.End()
	ss := mem.GetSpans().Snapshots() // before Shutdown, which empties mem
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 {
		t.Fatalf("recorded %d spans, want 3", len(ss))
	}
	return ss
}

// TestExportIsReadByACollectorAsTheSDKWroteIt proves that the request
// this package writes by hand is an ExportTraceServiceRequest: a receiver
// decoding it with the collector's own message type finds every span, its
// parent, kind, attributes, event, status and link.
func TestExportIsReadByACollectorAsTheSDKWroteIt(t *testing.T) {
	for _, gzip := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gzip], func(t *testing.T) {
			rcv := &otlptest.Receiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			exp, err := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces", Headers: map[string]string{"Authorization": "Bearer t"}, Gzip: gzip})
			if err != nil {
				t.Fatal(err)
			}
			in := spans(t)
			if err := exp.ExportSpans(t.Context(), in); err != nil {
				t.Fatal(err)
			}
			root, child, linked := in[1], in[0], in[2]
			hex := func(s sdktrace.ReadOnlySpan) string { return s.SpanContext().SpanID().String() }
			traceOf := func(s sdktrace.ReadOnlySpan) string { return s.SpanContext().TraceID().String() }
			scope := "github.com/reconcilekit/reconcilekit/tracing"
			want := []otlptest.Span{{
				Service: "at-operator", Scope: scope, Name: child.Name(), TraceID: traceOf(child), SpanID: hex(child), ParentID: hex(root),
				Kind: "SPAN_KIND_CLIENT", Start: child.StartTime(), End: child.EndTime(),
				Attributes: map[string]string{"http.request.method": "PATCH", "http.response.status_code": "429", "b": "true", "f": "1.5",
					"reconcilekit.drift.paths": ".spec.a,.spec.b", "is": "1,2"},
				Events: []string{"Retry-After"}, Status: "STATUS_CODE_ERROR", StatusMessage: "throttled",
			}, {
				Service: "at-operator", Scope: scope, Name: "reconcile At", TraceID: traceOf(root), SpanID: hex(root),
				Kind: "SPAN_KIND_CONSUMER", Start: root.StartTime(), End: root.EndTime(), Attributes: map[string]string{}, Status: "STATUS_CODE_UNSET",
			}, {
				Service: "at-operator", Scope: scope, Name: "reconcile Pod", TraceID: traceOf(linked), SpanID: hex(linked),
				Kind: "SPAN_KIND_INTERNAL", Start: linked.StartTime(), End: linked.EndTime(), Attributes: map[string]string{}, Status: "STATUS_CODE_UNSET",
				Links: []string{traceOf(root) + "/" + hex(root)},
			}}
			if diff := cmp.Diff(want, rcv.Spans(), cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("spans received (-want +got):\n%s", diff)
			}
			reqs := rcv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			wantEnc := map[bool]string{true: "gzip"}[gzip]
			if r.Method != http.MethodPost || r.Path != "/v1/traces" || r.ContentType != "application/x-protobuf" ||
				r.ContentEncoding != wantEnc || r.Header.Get("Authorization") != "Bearer t" {
				t.Errorf("request %s %s, Content-Type %q, Content-Encoding %q, Authorization %q; want POST /v1/traces, application/x-protobuf, %q, the header set",
					r.Method, r.Path, r.ContentType, r.ContentEncoding, r.Header.Get("Authorization"), wantEnc)
			}
		})
	}
}

// TestExportRetriesWhatTheCollectorAsksToRetry: a 503 is tried again
// until the timeout, a 400 is not; either is an error for the batch
// processor to report.
func TestExportRetriesWhatTheCollectorAsksToRetry(t *testing.T) {
	tests := []struct {
		status       int
		wantRequests func(int) bool
		want         string
	}{
		{http.StatusServiceUnavailable, func(n int) bool { return n >= 2 }, "503 Service Unavailable"},
		{http.StatusBadRequest, func(n int) bool { return n == 1 }, "400 Bad Request"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			rcv := &otlptest.Receiver{}
			rcv.SetStatus(tt.status)
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			// Retry-After says 1s: the timeout leaves room for one retry.
			exp, err := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces", Timeout: 1500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = exp.ExportSpans(t.Context(), spans(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ExportSpans: %v, want an error saying %q", err, tt.want)
			}
			if n := len(rcv.Requests()); !tt.wantRequests(n) {
				t.Errorf("%d requests", n)
			}
			if len(rcv.Spans()) != 0 {
				t.Errorf("the refusing receiver took spans")
			}
		})
	}
}

// TestExportToNoCollectorEndsWithItsTimeout: nothing listening is an
// error within the timeout, whatever the retries.
func TestExportToNoCollectorEndsWithItsTimeout(t *testing.T) {
	exp, err := otlphttp.New(otlphttp.Config{URL: "http://127.0.0.1:1/v1/traces", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = exp.ExportSpans(ctx, spans(t))
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Errorf("ExportSpans: %v, want the exporter's own deadline", err)
	}
}

// TestAfterShutdownNothingIsSent: the SDK flushes before it shuts the
// exporter down; what comes after is dropped without a request.
func TestAfterShutdownNothingIsSent(t *testing.T) {
	rcv := &otlptest.Receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	exp, err := otlphttp.New(otlphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(t.Context(), spans(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.Requests()); n != 0 {
		t.Errorf("%d requests after Shutdown, want none", n)
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		env      map[string]string
		want     otlphttp.Config
		wantOK   bool
		wantErr  string
	}{
		{name: "nothing set: no tracing"},
		{name: "the base endpoint gets the traces path",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			want:   otlphttp.Config{URL: "http://collector:4318/v1/traces", Timeout: 10 * time.Second},
			wantOK: true},
		{name: "a base endpoint with a path keeps it",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://gateway/otlp/"},
			want:   otlphttp.Config{URL: "https://gateway/otlp/v1/traces", Timeout: 10 * time.Second},
			wantOK: true},
		{name: "the traces endpoint is used as it is, before the base one",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom"},
			want:   otlphttp.Config{URL: "http://traces:9999/custom", Timeout: 10 * time.Second},
			wantOK: true},
		{name: "the flag before every variable", endpoint: "http://localhost:4318",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom"},
			want:   otlphttp.Config{URL: "http://localhost:4318/v1/traces", Timeout: 10 * time.Second},
			wantOK: true},
		{name: "headers, timeout and compression; the traces variable wins",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
				"OTEL_EXPORTER_OTLP_HEADERS":        "x=1",
				"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Authorization=Bearer%20t, tenant = a%2Cb",
				"OTEL_EXPORTER_OTLP_TIMEOUT":        "2500",
				"OTEL_EXPORTER_OTLP_COMPRESSION":    "gzip",
				"OTEL_EXPORTER_OTLP_PROTOCOL":       "http/protobuf"},
			want: otlphttp.Config{URL: "http://c:4318/v1/traces", Timeout: 2500 * time.Millisecond, Gzip: true,
				Headers: map[string]string{"Authorization": "Bearer t", "tenant": "a,b"}},
			wantOK: true},
		{name: "gRPC is refused, not ignored",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantOK:  true,
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL "grpc": this binary exports by OTLP/HTTP with protobuf only`},
		{name: "an endpoint without a scheme",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			wantOK:  true,
			wantErr: `OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318": want an http or https URL`},
		{name: "every bad value at once", endpoint: "http://",
			env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd",
				"OTEL_EXPORTER_OTLP_HEADERS": "novalue", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"},
			wantOK: true,
			wantErr: `--tracing-endpoint "http://": no host` + "\n" + `OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value` + "\n" +
				`OTEL_EXPORTER_OTLP_TIMEOUT "soon": want a positive number of milliseconds` + "\n" +
				`OTEL_EXPORTER_OTLP_COMPRESSION "zstd": want "gzip" or "none"` + "\n" +
				`OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: set both or neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := otlphttp.FromEnv(tt.endpoint, func(k string) string { return tt.env[k] })
			if ok != tt.wantOK {
				t.Errorf("ok %v, want %v", ok, tt.wantOK)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
