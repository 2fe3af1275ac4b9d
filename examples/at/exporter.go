package main

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/otlphttp"
)

// newExporter is where the spans go. It is alone in its file so that
// make bench can build the At with spans kept in memory instead (its
// traced scenario replaces this file with go build -overlay); nothing else
// changes.
func newExporter(cfg otlphttp.Config) (sdktrace.SpanExporter, error) {
	return otlphttp.New(cfg)
}
