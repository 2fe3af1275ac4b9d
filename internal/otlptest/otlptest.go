// Package otlptest is test plumbing: an OTLP/gRPC trace receiver inside the
// test process, where a kube-apiserver started with
// --tracing-config-file ([Receiver.APIServerFlags]) and the test's own
// exporter send their spans, and the flat, comparable form of the spans
// received.
package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// Span is a span as a receiver got it.
type Span struct {
	// Service is the resource's service.name ("apiserver" for
	// kube-apiserver).
	Service string
	Name    string
	// TraceID, SpanID and ParentID are hex; ParentID is empty for a root.
	TraceID, SpanID, ParentID string
	Kind                      string
	Start, End                time.Time
	Attributes                map[string]string
	// Links are the trace and span IDs linked to, "trace/span".
	Links []string
}

// Receiver is an OTLP/gRPC trace receiver on a loopback port.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Endpoint is host:port.
	Endpoint string

	srv   *grpc.Server
	mu    sync.Mutex
	spans []Span
	// notify is closed and replaced on every export.
	notify chan struct{}
}

// Start starts a receiver; Stop it.
func Start() (*Receiver, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{Endpoint: lis.Addr().String(), srv: grpc.NewServer(), notify: make(chan struct{})}
	collectortrace.RegisterTraceServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(lis) }()
	return r, nil
}

// Stop stops it.
func (r *Receiver) Stop() { r.srv.Stop() }

// Export receives spans.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind().String(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attributes: attrs(s.GetAttributes()),
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, hex.EncodeToString(l.GetTraceId())+"/"+hex.EncodeToString(l.GetSpanId()))
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans returns a copy of the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor waits until ok holds of the spans received, or ctx ends, and
// returns them.
func (r *Receiver) WaitFor(ctx context.Context, ok func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, notify := append([]Span(nil), r.spans...), r.notify
		r.mu.Unlock()
		if ok(spans) {
			return spans, nil
		}
		select {
		case <-notify:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: %w, with %d spans received", ctx.Err(), len(spans))
		}
	}
}

// APIServerFlags writes a kube-apiserver tracing configuration that sends
// every span (a sampling rate of one million per million) to r, into dir,
// and returns the flag that names it, for testenv.Options.APIServerFlags.
// kube-apiserver 1.37 traces with no feature gate: APIServerTracing is GA
// and no longer among its --feature-gates.
func (r *Receiver) APIServerFlags(dir string) (map[string]string, error) {
	path := filepath.Join(dir, "tracing-config.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: " + r.Endpoint + "\nsamplingRatePerMillion: 1000000\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	return map[string]string{"tracing-config-file": path}, nil
}

func attrs(kvs []*commonv1.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetArrayValue() != nil:
			s := ""
			for i, e := range v.GetArrayValue().GetValues() {
				if i > 0 {
					s += ","
				}
				s += valueString(e)
			}
			m[kv.GetKey()] = s
		default:
			m[kv.GetKey()] = valueString(v)
		}
	}
	return m
}

func valueString(v *commonv1.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonv1.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonv1.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	}
	return v.String()
}
