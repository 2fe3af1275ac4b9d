package tracing

import (
	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
)

// Keys of the span's IDs on each line a traced reconcile logs.
const (
	logTraceIDKey = "trace_id"
	logSpanIDKey  = "span_id"
)

// withSpan returns l adding sc's trace_id and span_id to each line it, or
// a logger derived from it (WithValues, WithName, V), logs. They are
// formatted when a line is logged, not before: logr's WithValues would
// have the sink encode them for every reconcile (zap encodes its context
// fields at once), where most reconciles log nothing at the level a
// production logger keeps.
func withSpan(l logr.Logger, sc trace.SpanContext) logr.Logger {
	s := l.GetSink()
	if s == nil {
		return l
	}
	return l.WithSink(&spanSink{sink: s, sc: sc})
}

// spanSink is a LogSink adding a span's IDs to what it logs.
type spanSink struct {
	sink logr.LogSink
	sc   trace.SpanContext
}

var (
	_ logr.CallDepthLogSink       = (*spanSink)(nil)
	_ logr.CallStackHelperLogSink = (*spanSink)(nil)
)

// Init does nothing: the sink it wraps was initialized with the Logger it
// came from, and withSpan makes no Logger of its own (logr.New calls Init).
func (s *spanSink) Init(logr.RuntimeInfo) {}

func (s *spanSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *spanSink) Info(level int, msg string, kv ...any) {
	s.helper()
	s.caller().Info(level, msg, s.ids(kv)...)
}

func (s *spanSink) Error(err error, msg string, kv ...any) {
	s.helper()
	s.caller().Error(err, msg, s.ids(kv)...)
}

func (s *spanSink) WithValues(kv ...any) logr.LogSink {
	return &spanSink{sink: s.sink.WithValues(kv...), sc: s.sc}
}

func (s *spanSink) WithName(name string) logr.LogSink {
	return &spanSink{sink: s.sink.WithName(name), sc: s.sc}
}

// WithCallDepth implements logr.CallDepthLogSink, for the sinks that do.
func (s *spanSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return &spanSink{sink: cd.WithCallDepth(depth), sc: s.sc}
	}
	return s
}

// GetCallStackHelper implements logr.CallStackHelperLogSink, for the
// sinks that do (testr): logr.Logger calls it before Info and Error.
func (s *spanSink) GetCallStackHelper() func() {
	if h, ok := s.sink.(logr.CallStackHelperLogSink); ok {
		return h.GetCallStackHelper()
	}
	return func() {}
}

// helper marks Info and Error as helpers for a sink that reports the
// caller through them (testr).
func (s *spanSink) helper() {
	if h, ok := s.sink.(logr.CallStackHelperLogSink); ok {
		h.GetCallStackHelper()()
	}
}

// caller is the wrapped sink, attributing the line to the caller of
// logr.Logger's Info or Error, one frame further out than its own:
// spanSink's method is between them.
func (s *spanSink) caller() logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return cd.WithCallDepth(1)
	}
	return s.sink
}

// ids returns the span's IDs followed by kv.
func (s *spanSink) ids(kv []any) []any {
	out := make([]any, 0, 4+len(kv))
	out = append(out, logTraceIDKey, s.sc.TraceID().String(), logSpanIDKey, s.sc.SpanID().String())
	return append(out, kv...)
}
