// Package otlphttp is the At operator's span exporter: OTLP over HTTP with
// binary protobuf (the protocol OpenTelemetry's SDKs default to), configured
// from the standard OTEL_EXPORTER_OTLP_* variables.
//
// It exists instead of the SDK's otlptracehttp for one reason: every
// exporter of the OpenTelemetry Go project imports the generated package of
// the collector's trace service, which holds the gRPC service as well as the
// request message, and so links gRPC, and through golang.org/x/net/trace
// html/template, whose reflection makes the linker keep every exported method
// of the binary (the At's TestBinaryLetsTheLinkerDropUnusedMethods). This
// package uses the protobuf messages of spans, resources and attributes,
// which import nothing but the protobuf runtime, and writes the one field of
// the request itself.
//
// What it does not do: OTLP/gRPC and OTLP/HTTP with JSON
// (OTEL_EXPORTER_OTLP_PROTOCOL other than http/protobuf is an error), and
// partial success (a 200 is a success).
package otlphttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter sends spans to one OTLP/HTTP endpoint. It is an
// sdktrace.SpanExporter, to be put behind the SDK's batch span processor,
// which calls it from one goroutine of its own: a collector that is slow or
// gone delays that goroutine, never the spans' callers.
type Exporter struct {
	cfg     Config
	client  *http.Client
	stopped atomic.Bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter that sends to cfg.URL.
func New(cfg Config) (*Exporter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.TLS
	return &Exporter{cfg: cfg, client: &http.Client{Transport: tr}}, nil
}

// errRetryable marks an attempt worth trying again.
var errRetryable = errors.New("retryable")

// ExportSpans sends spans in one request, retrying what the OTLP
// specification calls retryable (429, 502, 503 and 504, after the
// server's Retry-After when it gives one, and errors of the connection)
// until cfg.Timeout has passed since the first attempt, or ctx ends.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	body, err := Marshal(spans)
	if err != nil {
		return fmt.Errorf("otlphttp: encoding %d spans: %w", len(spans), err)
	}
	if e.cfg.Gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return fmt.Errorf("otlphttp: compressing: %w", err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlphttp: compressing: %w", err)
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		wait, err := e.send(ctx, body)
		if err == nil || !errors.Is(err, errRetryable) {
			return err
		}
		wait = max(wait, backoff)
		backoff = min(2*backoff, 5*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// send makes one attempt. A retryable error comes with how long the
// server asked to wait, if it did.
func (e *Exporter) send(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("otlphttp: %w", err)
	}
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("otlphttp: POST %s: %w", e.cfg.URL, err)
		}
		return 0, fmt.Errorf("otlphttp: POST %s: %w: %w", e.cfg.URL, errRetryable, err)
	}
	// Read the body whole so that the connection is reused; a status,
	// when the collector sends one, is of no use to the caller.
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		var wait time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return wait, fmt.Errorf("otlphttp: POST %s: %s: %w", e.cfg.URL, resp.Status, errRetryable)
	}
	if len(msg) > 0 && !bytes.ContainsFunc(msg, func(r rune) bool { return r < ' ' && r != '\n' }) {
		return 0, fmt.Errorf("otlphttp: POST %s: %s: %s", e.cfg.URL, resp.Status, bytes.TrimSpace(msg))
	}
	return 0, fmt.Errorf("otlphttp: POST %s: %s", e.cfg.URL, resp.Status)
}

// Shutdown stops the exporter: later exports send nothing. The batch
// processor flushes what it holds before it calls Shutdown.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}
