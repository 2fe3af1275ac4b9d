package tracing

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
)

// Config returns a copy of cfg whose clients trace their requests to the
// API server with tp: a client span for every write (create, update,
// patch, delete), and for every read made within a traced reconcile, each
// the child of the span in the request's context, named and described by
// OpenTelemetry's HTTP client conventions (span name "PATCH
// /apis/{group}/{version}/namespaces/{namespace}/{resource}/{name}",
// http.request.method, url.full, server.address, server.port,
// http.response.status_code, error.type; status Error for an error or a
// status code of 400 and above). Each such request carries the span's W3C
// trace context (the traceparent header), so that a kube-apiserver with
// tracing on (--tracing-config-file) records its spans for the request as
// the client span's children. Watches and the reads of informers (a list
// with no span in its context) are neither traced nor changed.
//
// Build the manager, and so its client, API reader, event recorders and
// Lease clients, from it:
//
//	mgr, err := ctrl.NewManager(tracing.Config(cfg, tp), ctrl.Options{...})
//
// A nil tp returns a copy of cfg that traces nothing. Like shard.Fence,
// it wraps cfg's transport with rest.Config.Wrap: the wrapper is the
// innermost, beneath client-go's own (authentication, retries) and after
// its rate limiter, so a span measures one request on the wire, and a
// request client-go retries is one span per try.
func Config(cfg *rest.Config, tp trace.TracerProvider) *rest.Config {
	out := rest.CopyConfig(cfg)
	if tp == nil {
		return out
	}
	tracer := tp.Tracer(ScopeName)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &transport{next: rt, tracer: tracer}
	})
	return out
}

// operationKey keys what [Operation] put in a context.
type operationKey struct{}

// operation labels the requests of a context.
type operation struct {
	name  string
	attrs []attribute.KeyValue
}

// OperationKey is the attribute naming what sent a request: the library
// call ("drift.Writer.Ensure", "status.Snapshot.Write", ...), set by [Operation].
const OperationKey = attribute.Key("reconcilekit.operation")

// Operation returns ctx labelled so that the client spans of the API
// requests sent with it (through a [Config]) carry [OperationKey] = name
// and attrs. It returns ctx unchanged when ctx holds no recording span:
// check [Recording] before building attrs, which then cost nothing with
// tracing off. Package drift labels its writes with it, with the paths
// that drifted.
func Operation(ctx context.Context, name string, attrs ...attribute.KeyValue) context.Context {
	if !Recording(ctx) {
		return ctx
	}
	return context.WithValue(ctx, operationKey{}, &operation{name: name, attrs: attrs})
}

// Recording reports whether ctx holds a span that records: what the
// package's helpers check before they spend anything.
func Recording(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// transport traces the requests it sends.
type transport struct {
	next   http.RoundTripper
	tracer trace.Tracer
}

// clientKind is the option of every client span, made once: an option
// built per request is an allocation per request.
var clientKind = trace.WithSpanKind(trace.SpanKindClient)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	read := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodOptions
	if read && !trace.SpanContextFromContext(ctx).IsValid() || isWatch(req.URL.RawQuery) {
		return t.next.RoundTrip(req)
	}
	// The span's name is the method and the template: one string, of
	// which the template is the tail.
	name, namespace := spanName(req.Method, req.URL.Path)
	var buf [10]attribute.KeyValue
	attrs := append(buf[:0],
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.URLFull(req.URL.String()),
		semconv.URLTemplate(name[len(req.Method)+1:]),
		semconv.ServerAddress(req.URL.Hostname()),
	)
	if port := portOf(req.URL.Port(), req.URL.Scheme); port > 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	if namespace != "" {
		attrs = append(attrs, semconv.K8SNamespaceName(namespace))
	}
	if op, ok := ctx.Value(operationKey{}).(*operation); ok {
		attrs = append(append(attrs, OperationKey.String(op.name)), op.attrs...)
	}
	ctx, span := t.tracer.Start(ctx, name, clientKind, trace.WithAttributes(attrs...))
	// A shallow copy with a header map of its own: a RoundTripper must not
	// change the request it is given, and the rest of it (the header's
	// values too) is not changed, only added to.
	out := req.WithContext(ctx)
	out.Header = make(http.Header, len(req.Header)+1)
	maps.Copy(out.Header, req.Header)
	traceContext.Inject(ctx, headerCarrier(out.Header))
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
		span.End()
		return resp, err
	}
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode), semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
	} else {
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	}
	if after := resp.Header.Get("Retry-After"); after != "" {
		// client-go waits this long before it sends the request again
		// (its next try is a span of its own).
		span.AddEvent("Retry-After", trace.WithAttributes(attribute.String("http.response.header.retry-after", after)))
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		span.End()
		return resp, nil
	}
	// The span ends with the response: when its body is read to the end
	// or closed, whichever comes first.
	resp.Body = &endingBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// isWatch reports whether a request's query asks for a watch
// (watch=true, as client-go sends it, or watch=1): parsed only when it
// names watch at all.
func isWatch(rawQuery string) bool {
	if !strings.Contains(rawQuery, "watch") {
		return false
	}
	q, _ := url.ParseQuery(rawQuery)
	w := q.Get("watch")
	return w == "true" || w == "1"
}

// headerCarrier sets the trace context's headers in their canonical form
// ("Traceparent") without canonicalizing the key on every request as
// http.Header.Set does.
type headerCarrier http.Header

func (c headerCarrier) Get(key string) string { return http.Header(c).Get(key) }

func (c headerCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c["Traceparent"] = []string{value}
	case "tracestate":
		c["Tracestate"] = []string{value}
	default:
		http.Header(c).Set(key, value)
	}
}

func (c headerCarrier) Keys() []string { return propagation.HeaderCarrier(c).Keys() }

// WrappedRoundTripper returns the transport it wraps (client-go's
// net.RoundTripperWrapper).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// endingBody ends its span at EOF, at an error or at Close.
type endingBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *endingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if err != io.EOF {
			b.span.RecordError(err)
		}
		b.end()
	}
	return n, err
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}

func (b *endingBody) end() { b.once.Do(func() { b.span.End() }) }

// spanName returns method + " " + the low-cardinality form of an API
// path, with the namespace and name replaced by {namespace} and {name},
// and the namespace: PATCH /api/v1/namespaces/ns/pods/p/status is
// "PATCH /api/v1/namespaces/{namespace}/pods/{name}/status" and "ns". It
// makes one string.
func spanName(method, path string) (name, namespace string) {
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path) + len("{namespace}{name}"))
	b.WriteString(method)
	b.WriteByte(' ')
	rest := strings.Trim(path, "/")
	// seg returns the next segment of rest and consumes it.
	seg := func() (string, bool) {
		if rest == "" {
			return "", false
		}
		s, r, _ := strings.Cut(rest, "/")
		rest = r
		return s, true
	}
	// The resource starts after /api/v1 or /apis/group/version.
	var prefix int
	switch first, _, _ := strings.Cut(rest, "/"); first {
	case "api":
		prefix = 2
	case "apis":
		prefix = 3
	}
	n := strings.Count(rest, "/") + 1
	if rest == "" || prefix == 0 || n < prefix {
		b.WriteString(path)
		return b.String(), ""
	}
	for range prefix {
		s, _ := seg()
		b.WriteByte('/')
		b.WriteString(s)
	}
	n -= prefix
	if n > 2 && strings.HasPrefix(rest, "namespaces/") {
		// namespaces/{namespace}/resource...
		seg()
		namespace, _ = seg()
		b.WriteString("/namespaces/{namespace}")
		n -= 2
	}
	if n > 1 {
		// resource/{name}/subresource...
		s, _ := seg()
		seg()
		b.WriteByte('/')
		b.WriteString(s)
		b.WriteString("/{name}")
	}
	if rest != "" {
		b.WriteByte('/')
		b.WriteString(rest)
	}
	return b.String(), namespace
}

func portOf(port, scheme string) int {
	if port == "" {
		if scheme == "https" {
			return 443
		}
		return 80
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return p
}
