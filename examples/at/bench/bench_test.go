package bench_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

var (
	benchN      = flag.Int("at.n", 20, "Ats per scenario in BenchmarkAtVsClassic")
	benchSpread = flag.Duration("at.spread", 3*time.Second, "how long the spread scenario's schedules span")
	reportPath  = flag.String("at.report", "", "write the report (markdown) to this file")
	diffBench   = flag.String("at.diffbench", "", "`go test -bench` output of package reconcile to fold into the report")
	commandLine = flag.String("at.command", "make bench", "the command to quote in the report")
)

// BenchmarkAtVsClassic measures both At controllers side by side on the
// same API server (see compare) and prints the table; with -at.report it
// writes the whole report. It runs the scenarios once whatever b.N is: its
// figures are the table's, not ns/op.
func BenchmarkAtVsClassic(b *testing.B) {
	env.Require(b)
	lockManagers(b)
	started := time.Now().UTC()
	load := loadAverage()
	var cmp comparison
	for range b.N {
		cmp = compare(b, *benchN, *benchSpread)
	}
	oi, os_ := cmp.instant[libraryAt], cmp.spreadOut[libraryAt]
	ci, cs := cmp.instant[classicAt], cmp.spreadOut[classicAt]
	b.ReportMetric(float64(total(os_.writes))/float64(cmp.n), "writes/At")
	b.ReportMetric(float64(total(cs.writes))/float64(cmp.n), "classic-writes/At")
	b.ReportMetric(oi.allDone.Seconds(), "s-to-all-DONE")
	b.ReportMetric(ci.allDone.Seconds(), "classic-s-to-all-DONE")
	b.ReportMetric(float64(os_.precision.P99.Milliseconds()), "p99-ms")
	b.ReportMetric(float64(cs.precision.P99.Milliseconds()), "classic-p99-ms")

	table := cmp.table().Markdown()
	fmt.Printf("\n%s\n", table)
	if *reportPath == "" {
		return
	}
	var diff []bench.GoBench
	if *diffBench != "" {
		f, err := os.Open(*diffBench)
		if err != nil {
			b.Fatal(err)
		}
		diff, err = bench.ParseGoBench(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	report := renderReport(b, cmp, table, diff, started, load)
	if err := os.WriteFile(*reportPath, []byte(report), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s", *reportPath)
}

func renderReport(tb testing.TB, cmp comparison, table string, diff []bench.GoBench, started time.Time, load string) string {
	var r bytes.Buffer
	fmt.Fprintf(&r, "# Benchmarks\n\n")
	fmt.Fprintf(&r, "Measured %s by `%s` (the `bench` target of the Makefile), on a real kube-apiserver and etcd (envtest).\n", started.Format("2006-01-02 15:04 UTC"), *commandLine)
	fmt.Fprintf(&r, "Regenerate with the same command; the figures below are the last run's, not targets. It runs:\n\n")
	fmt.Fprintf(&r, "```sh\ngo test -run '^$' -bench . -benchmem ./reconcile/ > reconcile.bench\n"+
		"go test -run '^$' -bench BenchmarkAtVsClassic -benchtime=1x -timeout 60m ./examples/at/bench/ \\\n"+
		"  -args -at.n=%d -at.spread=%s -at.report=BENCHMARKS.md -at.diffbench=reconcile.bench\n```\n\n", cmp.n, cmp.spread)
	fmt.Fprintf(&r, "with KUBEBUILDER_ASSETS pointing at the cached kube-apiserver and etcd, no -race, at commit %s.\n\n", vcsRevision())
	fmt.Fprintf(&r, "## Machine and versions\n\n")
	fmt.Fprintf(&r, "| | |\n|---|---|\n")
	fmt.Fprintf(&r, "| CPU | %s, %d logical CPUs, GOMAXPROCS %d |\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&r, "| load average when the run started | %s (the machine was shared with other work) |\n", load)
	fmt.Fprintf(&r, "| OS/arch | %s/%s |\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&r, "| Go | %s |\n", runtime.Version())
	fmt.Fprintf(&r, "| kube-apiserver | %s |\n", serverVersion(tb))
	for _, dep := range []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "k8s.io/apimachinery", "github.com/google/go-cmp"} {
		fmt.Fprintf(&r, "| %s | %s |\n", dep, moduleVersion(dep))
	}
	fmt.Fprintf(&r, "\n## The At operator: reconcilekit against the classic controller\n\n")
	fmt.Fprintf(&r, `Both controllers run the same CRD under the same harness, one after the other, each under its
own manager whose cache sees only its own namespace: **classic** is
[examples/at/bench/classic](examples/at/bench/classic) (cnat's logic: Status().Update on each phase change after a
reflect.DeepEqual check, r.Create when a Get misses, errors returned as they are, no finalizer, watching its
own status writes); **reconcilekit** is [examples/at](examples/at) (reconcile.Loop, requeue.At, Ensure,
finalizer, status conditions and observedGeneration). Every request of each controller's client is counted
by verb (reconciletest.Counter); reconciles come from controller-runtime's own metric. The harness plays
the kubelet: each Pod "runs" for %s, then gets status Succeeded with a terminated container status.

- **one instant**: %d Ats, all scheduled at the same instant, created before it; then a resync
  (each DONE At reconciled once more); then all deleted.
- **spread**: %d Ats scheduled evenly over %s; the lifecycle counts (created → DONE, deleted → gone) and
  the schedule precision come from this run.
- "Pod created − schedule" is the time the API server accepted the Pod's create minus spec.schedule.
- "peak heap growth" is the peak of the test process's live heap above its level before the controller
  started: the controller, its cache, and the harness (kubelet, counters), the same for both.
- "writes" counts write requests the server accepted; refused ones (409 conflicts of optimistic
  locking) are a separate row. Reconciles are counted from creation until the At is gone, deletion
  included.

`, podRunTime, cmp.n, cmp.n, cmp.spread)
	r.WriteString(goals(cmp))
	r.WriteString("\n")
	r.WriteString(table)
	fmt.Fprintf(&r, "\nRatios below 1 favour reconcilekit. The library controller's status writes are JSON merge patches\n"+
		"carrying the resourceVersion it read (so a stale cache shows up as refused writes, never as lost data);\n"+
		"the classic controller's are full Status().Update calls. The library adds a finalizer (one patch to add,\n"+
		"one to remove), which deletes the Pod of an At deleted while its Pod may still run; the classic controller\n"+
		"leaves every Pod to the garbage collector, which envtest does not run.\n")
	if len(diff) > 0 {
		fmt.Fprintf(&r, "\n## The diff engine (package reconcile)\n\n")
		fmt.Fprintf(&r, "`go test -run '^$' -bench . -benchmem ./reconcile/`, in the same run. The object is a Deployment as\n"+
			"the API server returns it (defaulted), compared with the desired one; ratio is ns/op against `reconcile.Diff`\n"+
			"of the same benchmark.\n\n")
		r.WriteString(diffTable(diff))
	}
	fmt.Fprintf(&r, "\n## Reliability\n\n")
	fmt.Fprintf(&r, "The tests in [examples/at/bench](examples/at/bench) (`go test -race ./examples/at/bench/`, part of `make test`):\n\n")
	for _, line := range reliabilityTests {
		fmt.Fprintf(&r, "- %s\n", line)
	}
	return r.String()
}

// goals checks the figures against the goals of issue 8.
func goals(cmp comparison) string {
	ci, oi := cmp.instant[classicAt], cmp.instant[libraryAt]
	cs, os := cmp.spreadOut[classicAt], cmp.spreadOut[libraryAt]
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	ours, theirs := total(os.writes), total(cs.writes)
	var b strings.Builder
	b.WriteString("| goal | measured | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| no write when resyncing DONE Ats | %d writes for %d Ats | %s |\n", oi.resyncWrites, cmp.n, met(oi.resyncWrites == 0))
	fmt.Fprintf(&b, "| accepted writes per At (created → DONE) ≤ classic + 1 | %s vs %s | %s |\n",
		bench.Number(float64(ours)/float64(cmp.n)), bench.Number(float64(theirs)/float64(cmp.n)), met(ours <= theirs+cmp.n))
	fmt.Fprintf(&b, "| %d Ats at one instant all DONE at least as fast as classic | %s vs %s | %s |\n", cmp.n,
		bench.Millis(oi.allDone.Seconds()), bench.Millis(ci.allDone.Seconds()), met(oi.allDone <= ci.allDone))
	fmt.Fprintf(&b, "| schedule precision p99 ≤ 1 s (%d over %s) | %s | %s |\n", cmp.n, cmp.spread,
		bench.Millis(os.precision.P99.Seconds()), met(os.precision.P99 <= time.Second))
	b.WriteString("| no periodic polling | a PENDING At scheduled in year 9999 is not reconciled at all for 3 s (`TestBadInputHasADefinedOutcomeAndNoHotLoop`) | see the test |\n")
	return b.String()
}

// reliabilityTests describes the tests of reliability_test.go for the
// report.
var reliabilityTests = []string{
	"`TestUnderInjectedFaultsEveryAtEndsDoneWithExactlyOnePod`: 200 Ats, 20% of the controller's writes and uncached reads fail (409, 429 with Retry-After, 500, 504, client timeout; seed 1), and 20% of successful Pod creates lose their response; every At must end DONE, Ready, with its finalizer, exactly one Pod accepted per At, and every At must still go when deleted.",
	"`TestRestartingTheManagerAtRandomPointsCreatesNoSecondPod`: 100 Ats; the manager is stopped at 5 random points and a new one started; exactly one Pod per At, all DONE.",
	"`TestASecondWritersFinalizerAndConditionsSurvive`: another client adds its finalizer and two conditions while the Ats run; none is lost, and deletion removes only the controller's own finalizer.",
	"`TestTheAPIServerRejectsInvalidAts`: a schedule that is not a date-time, an empty schedule or command, and a command over 4096 bytes are rejected by the CRD.",
	"`TestBadInputHasADefinedOutcomeAndNoHotLoop`: an unparsable schedule the CRD lets through → Stalled with one Warning event; a schedule in year 9999 → PENDING; a spec edited while RUNNING → observedGeneration follows, the Pod is untouched; no reconcile at all in the 3 s after they settle.",
	"`TestAStaleCachedAtDoesNotLoseItsPodsCompletion`: a reconcile that reads a stale PENDING At after its Pod finished must not leave it RUNNING for good.",
}

// diffTable renders go test -bench results with each benchmark's
// sub-benchmarks compared with its reconcile.Diff.
func diffTable(results []bench.GoBench) string {
	var b strings.Builder
	b.WriteString("| benchmark | ns/op | B/op | allocs/op | ns/op ratio to reconcile.Diff |\n|---|---:|---:|---:|---:|\n")
	ref := map[string]float64{}
	for _, r := range results {
		parent, sub, _ := strings.Cut(r.Name, "/")
		if sub == "reconcile.Diff" {
			ref[parent] = r.Metrics["ns/op"]
		}
	}
	for _, r := range results {
		parent, _, _ := strings.Cut(r.Name, "/")
		ratio := "–"
		if base, ok := ref[parent]; ok {
			ratio = bench.Ratio(r.Metrics["ns/op"], base)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.Name, bench.Number(r.Metrics["ns/op"]),
			bench.Number(r.Metrics["B/op"]), bench.Number(r.Metrics["allocs/op"]), ratio)
	}
	return b.String()
}

// vcsRevision is the commit checked out in the repository, from git; test
// binaries carry no VCS stamp.
func vcsRevision() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func serverVersion(tb testing.TB) string {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		tb.Fatal(err)
	}
	return v.GitVersion
}

// moduleVersion is the version of a module required by the repository's
// go.mod (test binaries carry no dependency list).
func moduleVersion(path string) string {
	data, err := os.ReadFile("../../../go.mod")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "unknown"
}
