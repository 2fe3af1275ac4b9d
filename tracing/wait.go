package tracing

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attributes of the spans of waits.
const (
	// WaitKindKey says what a wait waited for: "cache" (a read waiting
	// for the informer cache to catch up with this process's last write,
	// package freshness), and between reconciles "requeue" (a requeue
	// the reconcile asked for, such as requeue.At), "conflict", "throttled"
	// (a Retry-After of the server, or a hot loop's hold, package drift:
	// the reason says which) and "backoff" (the workqueue's, after an
	// error).
	WaitKindKey = attribute.Key("reconcilekit.wait.kind")
	// WaitPlannedKey is how long, in seconds, a wait between reconciles was
	// meant to last (the requeue's delay), when known. A wait cut short by
	// an event ends earlier.
	WaitPlannedKey = attribute.Key("reconcilekit.wait.planned")
	// WaitReasonKey is the reason of the error that made a reconcile wait
	// ("HotLoop", "TooManyRequests", ...).
	WaitReasonKey = attribute.Key("reconcilekit.wait.reason")
)

// Wait starts the span of a wait of kind (see [WaitKindKey]) within the
// traced work of ctx, named "wait " + kind; end it when the wait is over.
// Without a recording span in ctx it returns a span that does nothing, at
// no cost. Package freshness calls it when a read waits for the cache; a
// wait during a reconcile's first read, before its span starts, is
// recorded and given to the reconcile's span when it starts.
func Wait(ctx context.Context, kind string) trace.Span {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		_, span := s.TracerProvider().Tracer(ScopeName).Start(ctx, "wait "+kind,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(WaitKindKey.String(kind)))
		return span
	}
	if p, ok := ctx.Value(pendingKey{}).(*pending); ok {
		return p.start(kind)
	}
	return noopSpan
}

var noopSpan = trace.SpanFromContext(context.Background())

// pendingKey keys the waits recorded before a reconcile's span starts.
type pendingKey struct{}

// pending collects the waits of a reconcile's first read.
type pending struct {
	t     *Tracer
	mu    sync.Mutex
	waits []*pendingWait
}

func (p *pending) start(kind string) trace.Span {
	w := &pendingWait{p: p, kind: kind, start: p.t.now()}
	p.mu.Lock()
	p.waits = append(p.waits, w)
	p.mu.Unlock()
	return w
}

// replay makes a span of each wait recorded, as a child of ctx's span.
func (p *pending) replay(ctx context.Context, tracer trace.Tracer) {
	p.mu.Lock()
	waits := p.waits
	p.waits = nil
	p.mu.Unlock()
	for _, w := range waits {
		w.mu.Lock()
		end, attrs := w.end, append([]attribute.KeyValue{WaitKindKey.String(w.kind)}, w.attrs...)
		w.mu.Unlock()
		if end.IsZero() {
			end = p.t.now()
		}
		_, span := tracer.Start(ctx, "wait "+w.kind, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(w.start), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(end))
	}
}

// pendingWait is a wait recorded before its parent span exists: a Span
// that keeps its times and attributes.
type pendingWait struct {
	noop.Span
	p     *pending
	kind  string
	start time.Time

	mu    sync.Mutex
	end   time.Time
	attrs []attribute.KeyValue
}

func (w *pendingWait) IsRecording() bool { return true }

func (w *pendingWait) SetAttributes(kv ...attribute.KeyValue) {
	w.mu.Lock()
	w.attrs = append(w.attrs, kv...)
	w.mu.Unlock()
}

func (w *pendingWait) End(...trace.SpanEndOption) {
	w.mu.Lock()
	if w.end.IsZero() {
		w.end = w.p.t.now()
	}
	w.mu.Unlock()
}
