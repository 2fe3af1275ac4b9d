// Package bench measures reconcilekit's At operator against the classic
// hand-written At controller ([github.com/reconcilekit/reconcilekit/examples/at/bench/classic])
// on a real API server, and tests that the At operator survives faults,
// restarts, concurrent writers and bad input.
//
// The measurements and the tests live in this package's test files: they
// start one envtest control plane, run each controller under its own
// manager in its own namespace (never both against the same Ats), complete
// Pods as a kubelet would, and count every request each controller makes
// by verb. `make bench` runs the full sizes and writes BENCHMARKS.md; a
// reduced smoke run (20 Ats) is part of the ordinary `go test`.
//
// The exported part is the arithmetic the report needs and nothing else:
// [Summarize] turns samples into a [Distribution] (p50, p99, max),
// [Table] prints a side-by-side markdown table with the ratio of the two
// columns, and [ParseGoBench] reads `go test -bench` output so that other
// packages' micro-benchmarks can be folded into the same report. It does not
// time anything itself and asserts no timings.
package bench
