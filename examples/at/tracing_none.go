//go:build !otlp

package main

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpBuiltIn: this binary exports no spans. Every OTLP exporter links
// gRPC, and through golang.org/x/net/trace html/template, whose reflection
// keeps every exported method of the binary (TestBinaryLetsTheLinkerDropUnusedMethods):
// the tracing build is opt-in, go build -tags otlp ./examples/at.
const otlpBuiltIn = false

func newTracerProvider(context.Context, string) (*sdktrace.TracerProvider, error) {
	return nil, errors.New("this At binary was built without an OTLP exporter: build it with -tags otlp (docs/tracing.md)")
}
