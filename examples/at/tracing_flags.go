package main

import "os"

// tracingWanted says whether the operator traces: --tracing-endpoint, or
// the standard OTLP variables naming a collector.
func tracingWanted(endpoint string) bool {
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}
