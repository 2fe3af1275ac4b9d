package bench_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

var tracingReport = flag.String("at.tracing.report", "", "BenchmarkTracing: replace the tracing section of this report (BENCHMARKS.md) with its figures")

// tracingHeading is the heading of the tracing section of the report.
const tracingHeading = "## Tracing: what it costs the At (issue 49)"

// BenchmarkTracing runs make bench's tracing comparison alone (make
// bench-tracing): the At and the same At traced, in the rounds of make
// bench's first trial (the first size of -at.n at one instant, the first
// of -at.workers, the first of -at.rounds), on one audited control plane,
// and prints tracingSection; with -at.tracing.report it replaces that
// section of the report (BENCHMARKS.md), where make bench puts it, and
// leaves the rest alone. Both controllers run the same Ats, workers and
// rounds, as in make bench; -at.cpuprofile profiles both in the first round.
func BenchmarkTracing(b *testing.B) {
	pn := benchPlan()
	pn.sizes, pn.workers, pn.rounds = pn.sizes[:1], pn.workers[:1], pn.rounds[:1]
	pn.spreadN, pn.unrelated, pn.writeCostN, pn.sharded = 0, 0, 0, 0
	pn.memory, pn.tracing, pn.only = false, true, []kind{libraryAt, libraryTracedAt}
	started, load := time.Now().UTC(), loadAverage()
	var cmp comparison
	for range b.N {
		cmp = compare(b, pn)
	}
	section := tracingSection(cmp)
	if section == "" {
		b.Fatal("no trial ran the At traced beside the At")
	}
	// Each round's table (printed: a benchmark's log keeps ten lines): the
	// writes by target, refused writes, requests and reconciles, which say
	// where a difference in writes per At comes from.
	for _, t := range cmp.trials {
		for i, rd := range t.rounds {
			fmt.Printf("\n%s, round %d:\n\n%s", t.sc, i+1, t.table(rd).Markdown())
		}
	}
	fmt.Printf("\n%s", section)
	if *tracingReport == "" {
		return
	}
	old, err := os.ReadFile(*tracingReport)
	if err != nil {
		b.Fatal(err)
	}
	section = fmt.Sprintf("Measured %s by `%s` (the `bench-tracing` target of the Makefile: this section alone, apart from\n"+
		"the run the rest of this file comes from), at commit %s, no -race, on %s (%d logical CPUs), load average %s when\n"+
		"it started and %s when it ended (1, 5, 15 minutes: the machine is shared, so only ratios within one run\n"+
		"say anything); `make bench` measures it again with the rest.\n\n%s",
		started.Format("2006-01-02 15:04 UTC"), *commandLine, vcsRevision(), cpuModel(), runtime.NumCPU(), load, loadAverage(), section)
	if err := os.WriteFile(*tracingReport, []byte(spliceSection(string(old), tracingHeading, section, "## The At sharded")), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote the tracing section of %s", *tracingReport)
}

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

// TestBenchTracingPutsItsSectionWhereMakeBenchDoes: make bench-tracing's
// section goes, in a report without one, where make bench writes it
// (after the memory comparison, before the sharded At), and replaces it
// in a report with one, the rest left alone.
func TestBenchTracingPutsItsSectionWhereMakeBenchDoes(t *testing.T) {
	const (
		before = "# Benchmarks\n\n## Memory: what the caches hold (issue 38)\n\nmemory\n\n"
		after  = "## The At sharded (issue 25)\n\nsharded\n\n## The packages (compare, diet, drift, freshness, recorder, status)\n\npackages\n"
	)
	first := spliceSection(before+after, tracingHeading, "first\n", "## The At sharded")
	if want := before + tracingHeading + "\n\nfirst\n\n" + after; first != want {
		t.Errorf("spliced into a report without the section:\n%s\nwant:\n%s", first, want)
	}
	second := spliceSection(first, tracingHeading, "second\n", "## The At sharded")
	if want := before + tracingHeading + "\n\nsecond\n\n" + after; second != want {
		t.Errorf("spliced into a report with the section:\n%s\nwant:\n%s", second, want)
	}
}
