// Package otlptest is test plumbing: an OTLP trace receiver inside the
// test process, where a kube-apiserver started with
// --tracing-config-file ([Receiver.APIServerFlags]) and the test's own
// exporter send their spans by gRPC, and an OTLP/HTTP exporter by
// protobuf over HTTP (the Receiver is an http.Handler), and the flat,
// comparable form of the spans received.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is a span as a receiver got it.
type Span struct {
	// Service is the resource's service.name ("apiserver" for
	// kube-apiserver).
	Service string
	// Scope is the instrumentation scope's name.
	Scope string
	Name  string
	// TraceID, SpanID and ParentID are hex; ParentID is empty for a root.
	TraceID, SpanID, ParentID string
	Kind                      string
	Start, End                time.Time
	Attributes                map[string]string
	// Links are the trace and span IDs linked to, "trace/span".
	Links []string
	// Events are the events' names.
	Events []string
	// Status is the code's name ("STATUS_CODE_ERROR").
	Status, StatusMessage string
}

// Receiver is an OTLP/gRPC trace receiver on a loopback port (Start), and
// an OTLP/HTTP one wherever it is served as an http.Handler (its zero
// value too).
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Endpoint is host:port.
	Endpoint string

	// Status, when not 0, is what the HTTP handler answers instead of
	// taking spans; set it with SetStatus once the receiver serves.
	Status int

	srv      *grpc.Server
	mu       sync.Mutex
	spans    []Span
	requests []Request
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
func (r *Receiver) Stop() {
	if r.srv != nil {
		r.srv.Stop()
	}
}

// Export receives spans.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, Scope: ss.GetScope().GetName(), Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind().String(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attributes: attrs(s.GetAttributes()),
					Status:     s.GetStatus().GetCode().String(), StatusMessage: s.GetStatus().GetMessage(),
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
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
	if r.notify != nil {
		close(r.notify)
	}
	r.notify = make(chan struct{})
	r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Request is what the OTLP/HTTP handler saw of one request.
type Request struct {
	Method, Path, ContentType, ContentEncoding string
	Header                                     http.Header
}

// ServeHTTP receives spans by OTLP/HTTP with protobuf: a POST of an
// ExportTraceServiceRequest, gzipped or not, on any path. It answers
// Status, when set, instead of taking the spans (a collector that
// refuses); Requests records every request.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path,
		ContentType: req.Header.Get("Content-Type"), ContentEncoding: req.Header.Get("Content-Encoding"), Header: req.Header.Clone()})
	refuse := r.Status
	r.mu.Unlock()
	if refuse != 0 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(refuse), refuse)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = r.Export(req.Context(), &m)
	resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// SetStatus makes the HTTP handler answer code to every request (0: take
// the spans).
func (r *Receiver) SetStatus(code int) {
	r.mu.Lock()
	r.Status = code
	r.mu.Unlock()
}

// Requests returns what the HTTP handler saw of each request.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
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
		if r.notify == nil {
			r.notify = make(chan struct{}) // a Receiver served only as an http.Handler
		}
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
