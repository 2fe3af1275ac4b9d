package otlphttp

import (
	"math"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Marshal encodes spans as the body of an OTLP/HTTP trace export: an
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest in
// binary protobuf. The request message is one repeated field,
// resource_spans = 1, so it is written here field by field: its Go type
// lives in a package that also holds the gRPC service, and importing that
// would link gRPC (see the package comment).
func Marshal(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	var b []byte
	for _, rs := range resourceSpans(spans) {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// resourceSpans groups spans by resource, then by instrumentation scope,
// in the order each is first met.
func resourceSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var out []*tracepb.ResourceSpans
	byRes := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs, ok := byRes[rk]
		if !ok {
			rs = &tracepb.ResourceSpans{
				Resource:  &resourcepb.Resource{Attributes: keyValues(res.Attributes())},
				SchemaUrl: res.SchemaURL(),
			}
			byRes[rk] = rs
			out = append(out, rs)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{rk, sc}
		ss, ok := byScope[sk]
		if !ok {
			ss = &tracepb.ScopeSpans{
				Scope: &commonpb.InstrumentationScope{
					Name: sc.Name, Version: sc.Version, Attributes: keyValues(sc.Attributes.ToSlice()),
				},
				SchemaUrl: sc.SchemaURL,
			}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return out
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  flags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()), // the same numbers, 0 to 5
		StartTimeUnixNano:      unixNano(s.StartTime().UnixNano()),
		EndTimeUnixNano:        unixNano(s.EndTime().UnixNano()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: count(s.DroppedAttributes()),
		DroppedEventsCount:     count(s.DroppedEvents()),
		DroppedLinksCount:      count(s.DroppedLinks()),
		Status:                 status(s.Status()),
	}
	if psid := s.Parent().SpanID(); psid.IsValid() {
		p.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano:           unixNano(e.Time.UnixNano()),
			Name:                   e.Name,
			Attributes:             keyValues(e.Attributes),
			DroppedAttributesCount: count(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             keyValues(l.Attributes),
			DroppedAttributesCount: count(l.DroppedAttributeCount),
			Flags:                  flags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return p
}

// flags are the W3C trace flags in the low byte, and whether the parent
// (or the linked span) is remote in the bits OTLP gives it.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

// status maps the API's codes, whose numbers differ from OTLP's (Error
// is 1 in the API, 2 in OTLP).
func status(s sdktrace.Status) *tracepb.Status {
	c := tracepb.Status_STATUS_CODE_UNSET
	switch s.Code {
	case codes.Ok:
		c = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		c = tracepb.Status_STATUS_CODE_ERROR
	}
	return &tracepb.Status{Code: c, Message: s.Description}
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return array(v.AsSlice(), func(e attribute.Value) attribute.Value { return e })
	}
	return &commonpb.AnyValue{} // EMPTY: a value with none set, as OTLP writes it
}

func array[T any](elems []T, value func(T) attribute.Value) *commonpb.AnyValue {
	vs := make([]*commonpb.AnyValue, 0, len(elems))
	for _, e := range elems {
		vs = append(vs, anyValue(value(e)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func count(n int) uint32 { return uint32(min(max(0, n), math.MaxUint32)) }
