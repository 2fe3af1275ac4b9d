package main

import (
	"context"
	"os"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/otlphttp"
)

// newTracerProvider returns the SDK's TracerProvider exporting in batches
// by OTLP/HTTP with protobuf (the protocol OpenTelemetry's SDKs default to)
// to endpoint, a collector's base URL ("http://collector:4318") when set,
// else where the standard variables say (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, ...; package otlphttp). It returns nil, and no error, when
// neither names a collector: the operator does not trace. The resource is
// service.name "at-operator" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise; the sampler is the SDK's
// (OTEL_TRACES_SAMPLER). A collector that cannot be reached drops spans,
// never slows a reconcile: the batch processor does not wait for it.
func newTracerProvider(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	cfg, ok, err := otlphttp.FromEnv(endpoint, os.Getenv)
	if err != nil || !ok {
		return nil, err
	}
	exp, err := newExporter(cfg)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("at-operator")), resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res)), nil
}
