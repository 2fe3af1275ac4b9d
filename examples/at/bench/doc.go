// Package bench measures reconcilekit's At operator, like for like, against
// the same At written by hand on controller-runtime alone
// ([github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten],
// recording exactly what the library's At records) and against the naive
// cnat-style controller that records nothing
// ([github.com/reconcilekit/reconcilekit/examples/at/bench/classic]), on a
// real API server, and tests that the At operator survives faults,
// restarts, concurrent writers and bad input.
//
// The measurements and the tests live in this package's test files. The
// benchmark builds the controllers and runs each as its own OS process (the
// At operator's binary, examples/at, and the yardsticks' commands,
// handwritten/cmd/handwritten and classic/cmd/classic), in rounds, with the
// same flags and workers and leader election on, each authenticated as its own user of an envtest control plane whose
// API server writes an audit log: every request of a controller process,
// whichever of its clients sent it, is counted from that log by verb,
// resource and response code, its peak resident memory is read from
// /proc/<pid>/status and its reconciles from its metrics endpoint. A harness
// plays the kubelet. `make bench` runs the full sizes and writes
// BENCHMARKS.md; a reduced smoke run (20 Ats) is part of the ordinary
// `go test`. The At sharded is measured the same way (three replicas over
// six ranges against one replica: memory, cached objects, Lease writes),
// and the At tracing every reconcile into an exporter in memory against
// the At untraced in the first trial's rounds (process CPU, writes per At,
// all DONE, spans per At),
// and a test proves from the audit log that sharded replicas write each At
// once, each write from the replica that held the At's range, through
// scaling, a graceful stop and a kill. The reliability tests run the At controller in-process under a
// manager of the package's shared control plane.
//
// The exported part is what the report needs and nothing else: the parsers
// of what the harness reads ([ParseAuditLine] and [ReadAudit] for the audit
// log, with [AuditRequest.Class] sorting requests by what sent them and
// [AuditRequest.Holder] saying whom a Lease write names holder;
// [ParseProcStatus] for /proc/<pid>/status, [ParseProcStat] for
// /proc/<pid>/stat (the control plane's CPU); [SumMetric] for a metrics
// endpoint), and the arithmetic of the report: [Summarize] turns samples
// into a [Distribution] (p50, p99, max), [Spread] a figure of several
// rounds into its median and range, [Table] prints a side-by-side markdown
// table with ratios between its columns, and [ParseGoBench] reads
// `go test -bench` output so that other packages' micro-benchmarks can be
// folded into the same report. It does not time anything itself and asserts
// no timings.
package bench
