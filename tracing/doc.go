// Package tracing follows a user's edit of an object to every write it
// caused, through the API server, with OpenTelemetry: a span per reconcile,
// a span per request to the API server, a span per wait, and one trace from
// the edit to the object's convergence.
//
// It imports only the OpenTelemetry API (go.opentelemetry.io/otel/trace,
// propagation, attribute, codes, semconv); the SDK and its exporters are the
// operator's choice, in its main package. The core packages (errors,
// requeue, compare, status, finalizer, ownership) import none of it. With no
// TracerProvider, nothing is traced and a reconcile allocates nothing more.
//
// # Turning it on
//
// Three lines, beside a TracerProvider of the SDK:
//
//	cfg = tracing.Config(cfg, tp)           // a client span per API request, W3C traceparent on it
//	tracer := tracing.New(tp)               // one per controller
//	loop.Tracer = tracer                    // a reconcile.Loop; else tracing.Reconciler[*v1.Website](tracer, mgr.GetClient(), r)
//
// and tracer.Predicate() last among the filters of each Owns(), so that a
// child's change that wakes its parent is linked from the parent's
// reconcile. docs/tracing.md in the module shows it in a kubebuilder
// project, with the OTLP exporter and its environment variables.
//
// # What a trace holds
//
//   - A reconcile is a span ("reconcile At", kind consumer) carrying the
//     object's key, kind, UID, generation and resourceVersion, and the
//     decision: its errors.Class, requeue delay, reason, error, and whether
//     the object is done. The reconcile's logger carries trace_id and
//     span_id.
//   - Every request the reconcile sends to the API server is a client span
//     beneath it ([Config]): Ensure's create, patch or apply (labelled
//     drift.Writer.Ensure, with the paths that drifted), status writes, finalizer
//     patches, deletes, and the events it records (sent later, by package
//     recorder, as children of the reconcile). Requests outside reconciles
//     (Lease renewals of package shard and leader election) are spans of
//     their own. The W3C traceparent header rides on each request, so a
//     kube-apiserver with tracing on records its spans as their children.
//   - Every wait is a span: a read waiting for the cache to catch up with
//     this process's write ("wait cache", package freshness), and between
//     two reconciles the requeue the first asked for ("wait requeue",
//     such as requeue.At's schedule), a conflict's retry, a Retry-After
//     or a hot loop's hold ("wait throttled") and the workqueue's backoff
//     after an error ("wait backoff").
//
// # One trace per edit, across objects
//
// A reconcile's span is the child of the trace the object's current edit
// belongs to ([Tracer.Begin] says how it is found), so the reconciles of
// one edit, from the first to the one that finds the object done, are one
// trace. The first begins it: as a child of the object's [Annotation] when
// a user, CI or another controller set one (a malformed one is ignored),
// else as a new trace.
//
// The objects a reconcile writes carry its trace context in the
// [Annotation] tracing.k8s.io/traceparent, the key KEP-5915 proposes. It
// rides on the write package drift sends anyway: never an extra write, and
// never drift, so a converged resync writes nothing still. When the change
// of such a child wakes its parent ([Tracer.Predicate] for Owns,
// [Tracer.Handler] for other watches, such as package track's), the
// parent's next reconcile span is linked to the child's trace context,
// KEP-5915's span link. A controller of the child that follows KEP-5915
// continues the same trace.
//
// What a Tracer keeps of each object is bounded ([Tracer.MaxObjects]) and
// forgotten when the object is gone. An unreachable collector is the SDK's
// business: its batch span processor drops spans rather than wait, so
// tracing never slows or fails a reconcile.
package tracing
