package bench_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// tracingCPUGoal bounds the traced At's process CPU over the untraced
// At's (issue 49: at most 5% more).
const tracingCPUGoal = 1.05

// tracingSection is the report's comparison of the At tracing every
// reconcile against the same At without tracing, in the same rounds of
// every trial that ran both, and issue 49's goals. "" when no trial ran
// the traced At.
func tracingSection(cmp comparison) string {
	var b strings.Builder
	cpu := func(r *run) float64 { return r.cpu }
	writes := perAt(func(r *run) int { return total(accepted(r.lifecycle)) })
	done := func(r *run) float64 { return r.allDone.Seconds() }
	figs := []goal{
		{metric: "CPU time of the process, start → all DONE", of: cpu, format: seconds},
		{metric: "accepted writes per At, created → DONE (events included)", of: writes},
		{metric: "all DONE after the (last) schedule", of: done, format: bench.Millis},
		{metric: "mean reconcile duration, created → DONE", of: func(r *run) float64 { return r.reconcileTime }, format: bench.Millis},
		{metric: "peak RSS of the process (VmHWM), created → DONE", of: func(r *run) float64 { return float64(r.hwm) }, format: bench.MiB},
		{metric: "resync (restart on the DONE Ats): writes", of: func(r *run) float64 { return float64(count(r.resync, isWrite)) }},
	}
	found := false
	for _, t := range cmp.trials {
		if !t.has(libraryTracedAt) || !t.has(libraryAt) {
			continue
		}
		if !found {
			found = true
			b.WriteString("The At as it ships (**reconcilekit**) against the same binary tracing (**traced**: the SDK's\n" +
				"TracerProvider sampling every span (`OTEL_TRACES_SAMPLER=always_on`), its batch span processor, and an exporter\n" +
				"in memory that counts the spans and drops them, put in place of the OTLP exporter at build time by the harness\n" +
				"(`go build -overlay` of examples/at/exporter.go); every request of the process a client span, every reconcile\n" +
				"and wait a span, every written object annotated with its traceparent; [docs/tracing.md](docs/tracing.md)),\n" +
				"in the same rounds, the order rotating. Medians of the rounds, with their range; ratios per round.\n\n")
			b.WriteString("| scenario | metric | reconcilekit | traced | traced ÷ reconcilekit |\n|---|---|---:|---:|---:|\n")
		}
		for _, g := range figs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.sc, g.metric,
				spread(t.values(libraryAt, g.of), g.format), spread(t.values(libraryTracedAt, g.of), g.format),
				ratioCell(t.ratios(libraryTracedAt, libraryAt, g.of)))
		}
		fmt.Fprintf(&b, "| %s | spans exported per At, start → all DONE | | %s | |\n", t.sc,
			spread(t.values(libraryTracedAt, func(r *run) float64 { return r.spans / float64(r.sc.n) }), nil))
	}
	if !found {
		return ""
	}
	b.WriteString("\n**Goals** (issue 49): tracing on, sampling every span into memory, costs at most 5% more CPU of the process\n" +
		"(the median of the rounds' ratios), the same writes per At (to the hundredth, as in the memory comparison), and no\n" +
		"change to the time until all DONE beyond noise (the traced At's median at most the untraced At's slowest round).\n\n")
	b.WriteString("| scenario | goal | measured | limit | |\n|---|---|---:|---:|---|\n")
	for _, t := range cmp.trials {
		if !t.has(libraryTracedAt) || !t.has(libraryAt) {
			continue
		}
		rs := t.ratios(libraryTracedAt, libraryAt, cpu)
		med, _, _ := bench.Spread(rs)
		fmt.Fprintf(&b, "| %s | CPU time of the process, traced ÷ reconcilekit | %s | ≤ %s× | %s |\n",
			t.sc, spread(rs, ratioFormat), bench.Number(tracingCPUGoal), verdict(len(rs) > 0 && med <= tracingCPUGoal))
		traced, _, _ := bench.Spread(t.values(libraryTracedAt, writes))
		plain, _, _ := bench.Spread(t.values(libraryAt, writes))
		fmt.Fprintf(&b, "| %s | accepted writes per At, traced against reconcilekit (to the hundredth) | %s | %s | %s |\n",
			t.sc, strconv.FormatFloat(traced, 'f', 4, 64), strconv.FormatFloat(plain, 'f', 4, 64), verdict(len(rs) > 0 && sameWrites(traced, plain)))
		tracedDone, _, _ := bench.Spread(t.values(libraryTracedAt, done))
		_, _, slowest := bench.Spread(t.values(libraryAt, done))
		fmt.Fprintf(&b, "| %s | all DONE after the schedule, traced median against reconcilekit's slowest round | %s | %s | %s |\n",
			t.sc, bench.Millis(tracedDone), bench.Millis(slowest), verdict(len(rs) > 0 && tracedDone <= slowest))
	}
	return b.String()
}

// ratioCell is spread's ratio, or nothing when no round had a divisor
// (the resync's writes, 0 for both).
func ratioCell(rs []float64) string {
	if len(rs) == 0 {
		return ""
	}
	return spread(rs, ratioFormat)
}
