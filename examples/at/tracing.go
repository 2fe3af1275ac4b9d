//go:build otlp

package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// otlpBuiltIn: this binary exports spans.
const otlpBuiltIn = true

// newTracerProvider returns the SDK's TracerProvider exporting by
// OTLP/HTTP (protobuf, the protocol OpenTelemetry's SDKs default to; gRPC
// would link golang.org/x/net/trace's templates, and with them every
// exported method of the binary) in batches: to endpoint (a URL,
// "http://collector:4318") when
// set, else where the standard variables say (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _HEADERS, _INSECURE, _TIMEOUT, ...).
// The resource is service.name "at-operator" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise; the sampler is the SDK's
// (OTEL_TRACES_SAMPLER). A collector that cannot be reached drops spans,
// never slows a reconcile: the batch processor does not wait for it.
func newTracerProvider(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("at-operator")), resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res)), nil
}
