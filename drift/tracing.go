package drift

import "go.opentelemetry.io/otel/attribute"

// The attributes of the client span of a write of the Writer, within a
// traced reconcile (package tracing: a manager built from tracing.Config,
// a Loop with a Tracer). The write's reconcilekit.operation is
// "drift.Writer.Ensure" ("drift.Replaces" for the managedFields patch of
// Replaces).
const (
	// driftWriteKey is what was written: "create", "patch", "apply", or
	// "managedFields".
	driftWriteKey = attribute.Key("reconcilekit.drift.write")
	// driftPathsKey lists the drifted fields the write sets, as
	// compare.Comparison.Paths does; absent from a create.
	driftPathsKey = attribute.Key("reconcilekit.drift.paths")
)
