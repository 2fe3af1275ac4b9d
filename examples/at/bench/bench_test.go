package bench_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// ints is a flag holding a comma-separated list of positive integers.
type ints []int

func (v *ints) String() string {
	s := make([]string, len(*v))
	for i, n := range *v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (v *ints) Set(s string) error {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, n)
	}
	*v = out
	return nil
}

// packageBenchmarks are the packages whose benchmarks `make bench` runs
// beside the At's, as the Makefile passes them to go test.
const packageBenchmarks = "./compare/ ./diet/ ./drift/ ./freshness/ ./recorder/ ./status/"

var (
	benchSizes   = ints{20}
	benchWorkers = ints{4}
	benchRounds  = ints{3}
	benchSpread  = flag.Duration("at.spread", 3*time.Second, "how long the spread scenario's schedules span (0: no spread scenario)")
	benchSpreadN = flag.Int("at.spread.n", 0, "Ats in the spread scenario (0: the first of -at.n)")
	unrelated    = flag.Int("at.unrelated", 20, "unrelated Pods in the memory scenario (0: none)")
	pace         = flag.Duration("at.pace", 10*time.Millisecond, "interval between two At creations (the same for every controller)")
	cpuProfiles  = flag.String("at.cpuprofile", "", "directory for a CPU profile of each controller process during the first one-instant scenario")
	cpuFor       = flag.Duration("at.cpuprofile.for", 30*time.Second, "how long each CPU profile lasts, from the start of creation")
	reportPath   = flag.String("at.report", "", "write the report (markdown) to this file")
	diffBench    = flag.String("at.diffbench", "", "`go test -bench` output of the library's packages (see packageBenchmarks) to fold into the report")
	commandLine  = flag.String("at.command", "make bench", "the command to quote in the report")
	writeCostN   = flag.Int("at.writecost.n", 1000, "Ats that get each kind of write when measuring what a write costs the API server; 0 skips it")
	shardedN     = flag.Int("at.sharded", 60, "Ats at one instant in the sharded scenario: the At as one replica, then with --shards=6 as 3 replicas (0: no sharded scenario)")
	memory       = flag.Bool("at.memory", true, "also run, in every one-instant trial, the bare client-go floor and the At without its cache diet (issue 38's memory comparison)")
	memoryRounds = flag.Int("at.memory.rounds", 0, "run them in only that many rounds of each trial (0: every round)")
	only         = flag.String("at.only", "", "run only these controllers in the trials, comma-separated kinds (classic, hand-written, reconcilekit, reconcilekit-upstream-guard, bare, reconcilekit-no-diet, reconcilekit-traced); empty: every one")
	tracingOn    = flag.Bool("at.tracing", true, "also run, in the first trial, the At tracing every reconcile into an exporter in memory (issue 49's comparison)")
)

func init() {
	flag.Var(&benchSizes, "at.n", "Ats per one-instant scenario, comma-separated (each size runs with each -at.workers)")
	flag.Var(&benchWorkers, "at.workers", "workers of every controller, comma-separated")
	flag.Var(&benchRounds, "at.rounds", "rounds of each size, comma-separated (the last repeated for further sizes)")
}

// benchPlan is the plan the flags describe.
func benchPlan() plan {
	spreadN := *benchSpreadN
	switch {
	case *benchSpread == 0:
		spreadN = 0 // no spread scenario
	case spreadN == 0:
		spreadN = benchSizes[0]
	}
	return plan{sizes: benchSizes, workers: benchWorkers, rounds: benchRounds, spreadN: spreadN, spread: *benchSpread,
		unrelated: *unrelated, pace: *pace, writeCostN: *writeCostN, sharded: *shardedN, profiles: *cpuProfiles, profileFor: *cpuFor,
		memory: *memory, memoryRounds: *memoryRounds, only: onlyKinds(), tracing: *tracingOn}
}

// onlyKinds is -at.only as kinds.
func onlyKinds() []kind {
	var out []kind
	for f := range strings.SplitSeq(*only, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, kind(f))
		}
	}
	return out
}

// BenchmarkAt measures the At controllers (the library's, the hand-written
// one, the naive one) as processes side by side on one audited API server
// (see compare) and prints the tables; with -at.report it writes the whole
// report. It runs the trials once whatever b.N is: its figures are the
// report's, not ns/op.
func BenchmarkAt(b *testing.B) {
	started := time.Now().UTC()
	load := loadAverage()
	var cmp comparison
	for range b.N {
		cmp = compare(b, benchPlan())
		if pn := soakPlanOfFlags(); pn.enabled() {
			b.Logf("soak: %d Ats per wave, %d waves or %s, outage %s", pn.n, pn.waves, pn.runFor, pn.outage)
			res := soak(b, buildBinaries(b, true), pn)
			cmp.soak = &res
		}
	}
	for _, t := range cmp.trials {
		for i, rd := range t.rounds {
			fmt.Printf("\n%s, round %d\n\n%s", t.sc, i+1, t.table(rd).Markdown())
		}
	}
	fmt.Printf("\n%s", headline(cmp))
	if s := memorySection(cmp); s != "" {
		fmt.Printf("\n%s", s)
	}
	if s := tracingSection(cmp); s != "" {
		fmt.Printf("\n%s", s)
	}
	if cmp.sharded != nil {
		fmt.Printf("\n%s", shardedSection(*cmp.sharded))
	}
	if cmp.soak != nil {
		fmt.Printf("\n%s", soakSection(*cmp.soak))
	}
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
	report := renderReport(b, cmp, diff, started, load)
	if err := os.WriteFile(*reportPath, []byte(report), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %s", *reportPath)
}

func renderReport(tb testing.TB, cmp comparison, diff []bench.GoBench, started time.Time, load string) string {
	pn := cmp.plan
	var r bytes.Buffer
	fmt.Fprintf(&r, "# Benchmarks\n\n")
	fmt.Fprintf(&r, "Measured %s by `%s` (the `bench` target of the Makefile), on a real kube-apiserver and etcd (envtest).\n", started.Format("2006-01-02 15:04 UTC"), *commandLine)
	fmt.Fprintf(&r, "Regenerate with the same command; the figures below are the last run's, not targets. It runs:\n\n")
	fmt.Fprintf(&r, "```sh\ngo test -run '^$' -bench . -benchmem "+packageBenchmarks+" > packages.bench\n"+
		"go test -run '^$' -bench BenchmarkAt -benchtime=1x -timeout 300m ./examples/at/bench/ \\\n"+
		"  -args -at.n=%s -at.workers=%s -at.rounds=%s -at.spread=%s -at.spread.n=%d -at.unrelated=%d -at.pace=%s -at.writecost.n=%d -at.sharded=%d \\\n"+
		"  -at.report=BENCHMARKS.md -at.diffbench=packages.bench",
		(*ints)(&pn.sizes), (*ints)(&pn.workers), (*ints)(&pn.rounds), pn.spread, pn.spreadN, pn.unrelated, pn.pace, pn.writeCostN, pn.sharded)
	if pn.profiles != "" {
		fmt.Fprintf(&r, " -at.cpuprofile=%s -at.cpuprofile.for=%s", pn.profiles, pn.profileFor)
	}
	if !pn.memory || pn.memoryRounds > 0 {
		fmt.Fprintf(&r, " -at.memory=%v -at.memory.rounds=%d", pn.memory, pn.memoryRounds)
	}
	if cmp.soak != nil {
		sp := cmp.soak.plan
		fmt.Fprintf(&r, " -at.soak.n=%d -at.soak.waves=%d -at.soak.for=%s -at.soak.outage=%s", sp.n, sp.waves, sp.runFor, sp.outage)
	}
	if !pn.tracing {
		fmt.Fprintf(&r, " -at.tracing=false")
	}
	if len(pn.only) > 0 {
		var names []string
		for _, k := range pn.only {
			names = append(names, string(k))
		}
		fmt.Fprintf(&r, " -at.only=%s", strings.Join(names, ","))
	}
	fmt.Fprintf(&r, "\n```\n\nwith KUBEBUILDER_ASSETS pointing at the cached kube-apiserver and etcd, no -race, at commit %s.\n\n", vcsRevision())
	fmt.Fprintf(&r, "## Machine and versions\n\n")
	fmt.Fprintf(&r, "| | |\n|---|---|\n")
	fmt.Fprintf(&r, "| CPU | %s, %d logical CPUs, GOMAXPROCS %d |\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&r, "| load average when the run started | %s |\n", load)
	fmt.Fprintf(&r, "| load average when the run ended | %s |\n", loadAverage())
	fmt.Fprintf(&r, "| OS/arch | %s/%s |\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&r, "| Go | %s |\n", runtime.Version())
	fmt.Fprintf(&r, "| kube-apiserver | %s |\n", cmp.serverVersion)
	for _, dep := range []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "k8s.io/apimachinery", "github.com/google/go-cmp"} {
		fmt.Fprintf(&r, "| %s | %s |\n", dep, moduleVersion(dep))
	}

	fmt.Fprintf(&r, "\n## The At operator, like for like\n\n")
	r.WriteString(headline(cmp))
	fmt.Fprintf(&r, "\n### How it is measured\n\n")
	r.WriteString(method(cmp))
	if len(cmp.writeCosts) > 0 {
		fmt.Fprintf(&r, "\n### What each write costs the API server\n\n")
		r.WriteString(writeCostSection(cmp.writeCosts, pn.writeCostN, writeCostRounds))
	}
	for _, t := range cmp.trials {
		for i, rd := range t.rounds {
			fmt.Fprintf(&r, "\n### %s, round %d of %d\n\n", t.sc, i+1, len(t.rounds))
			fmt.Fprintf(&r, "Run order: %s.", strings.Join(headings(rd.order), ", then "))
			for _, k := range rd.order {
				fmt.Fprintf(&r, " %s: Ats created in %s, the last %s before the %s.", k.heading(), millis(rd.runs[k].created), millis(rd.runs[k].ahead), scheduleWord(t.sc))
			}
			fmt.Fprintf(&r, "\n\n%s", t.table(rd).Markdown())
		}
	}
	if s := memorySection(cmp); s != "" {
		fmt.Fprintf(&r, "\n## Memory: what the caches hold (issue 38)\n\n")
		r.WriteString(s)
	}
	if s := tracingSection(cmp); s != "" {
		fmt.Fprintf(&r, "\n%s\n\n", tracingHeading)
		r.WriteString(s)
	}
	if cmp.sharded != nil {
		fmt.Fprintf(&r, "\n## The At sharded (issue 25)\n\n")
		r.WriteString(shardedSection(*cmp.sharded))
	}
	if cmp.soak != nil {
		fmt.Fprintf(&r, "\n%s\n\n", soakHeading)
		r.WriteString(soakSection(*cmp.soak))
	}
	if len(diff) > 0 {
		fmt.Fprintf(&r, "\n## The packages (compare, diet, drift, freshness, recorder, status)\n\n")
		fmt.Fprintf(&r, "`go test -run '^$' -bench . -benchmem %s`, in the same run; the benchmarks that talk to an API\n"+
			"server use envtest. compare: a Deployment as the API server returns it (defaulted) compared with the\n"+
			"desired one; diet: the bytes a cache holds per object of the At's shapes, whole and on the diet (B/object;\n"+
			"its ns/op is the time to list them into a cache); drift: Ensure's requests per converged call; freshness: a read through the guard against a plain\n"+
			"client, and the tracker's memory per remembered write; recorder: the heap client-go's event broadcaster and a\n"+
			"Recorder keep per event sent (10,000 events); status: the writer's no-op against a deep copy and\n"+
			"controller-runtime's MergeFrom, and its status encoding against the whole-object encoding it replaced.\n\n"+
			"Each ratio is the row's ns/op over that of the row named in \"compared with\", so its direction depends on\n"+
			"the group: in compare's Compare groups that row is `compare.Diff` itself, and a ratio below 1 is an\n"+
			"alternative *faster* than the library (reflect.DeepEqual, which cannot tell defaulted fields from drift\n"+
			"nor say what drifted); in the other groups the named row is the alternative, and below 1 favours the library.\n\n", packageBenchmarks)
		r.WriteString(packageTable(diff))
	}
	fmt.Fprintf(&r, "\n## Reliability\n\n")
	fmt.Fprintf(&r, "The tests in [examples/at/bench](examples/at/bench) (`go test -race ./examples/at/bench/`, part of `make test`):\n\n")
	for _, line := range reliabilityTests {
		fmt.Fprintf(&r, "- %s\n", line)
	}
	return r.String()
}

func millis(d time.Duration) string { return bench.Millis(d.Seconds()) }

func scheduleWord(sc scenario) string {
	if sc.spread > 0 {
		return "first schedule"
	}
	return "schedule"
}

// method describes how the figures are measured.
func method(cmp comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, `**What runs.** Each controller is its own OS process, built without -race:
- **reconcilekit** is the At operator's binary as it ships ([examples/at](examples/at): reconcile.Loop, requeue.At,
  Ensure, finalizer, conditions, events, the freshness guard; its main caches only the Pods an At labelled);
- **hand-written** is [examples/at/bench/handwritten](examples/at/bench/handwritten): the same At on controller-runtime
  alone, recording exactly what the library's At records (status, kstatus conditions with the same reasons and
  messages, observedGeneration, the finalizer and its cleanup, the Ready and Warning events, the same event filters
  and Pod cache), written as a careful kubebuilder author would (meta.SetStatusCondition, Status().Update only when
  the status changed, conflicts requeued quietly), with no read-your-own-writes guard;
- **naive (classic)** is [examples/at/bench/classic](examples/at/bench/classic), the cnat-style reconciler
  (Status().Update after a reflect.DeepEqual check, r.Create when a cached Get misses, no finalizer, no conditions,
  no events, watching its own status writes, caching every Pod as cnat does): the floor of a controller that records
  nothing;
- **reconcilekit on controller-runtime's guard**, in the first trial only, is the At operator's binary with
  --read-your-writes=controller-runtime.

The two yardsticks run under a main with the At's flags and manager options. Every controller runs with the same
--workers in each scenario, leader election on (default timings 15 s / 10 s / 2 s, Lease released on exit), caches
of every namespace, metrics on, against the same API server and the same CRD.

**Where.** One envtest control plane (kube-apiserver and etcd) for the whole run, shared by every controller; each
trial runs its controllers one after the other, in rounds, and the order rotates from one round (and one trial) to
the next so that none always meets the warmer or fuller server. Ratios come from the same round. Each run has a
fresh namespace; its Ats are deleted and its Pods removed (as the garbage collector envtest lacks would) before the
next run starts.

**The load.** The harness (a cluster admin, not counted) creates the Ats at a steady pace, one every %s
(up to 8 requests in flight), the same for every controller, timed so that the last At is due %s before the
one common schedule (%s before the first schedule of the spread scenario, so that its precision is the timer's,
not the backlog of creation); each run states when its last At was actually created. It plays the
kubelet: each Pod "runs" %s after the harness first sees it, then gets phase Succeeded with a terminated
container status.

**Every request, from the server's side.** Each controller process authenticates as its own envtest user (a
client certificate; groups system:masters and %s). The API server writes an audit log (a policy at level
Metadata for that group, nothing for anyone else; JSON lines; the RequestReceived stage omitted) and the
harness reads it (never rotated), keeping the lines of the run's user, one request per audit ID. So every request of the
process counts, whichever client sent it: the cached client's writes, the API reader's reads, the event
recorder's events, leader election's Lease, the informers' lists and watches, discovery. Requests are sorted
by verb and resource and by response code: "accepted" is 2xx, "refused" is 409 Conflict, "uncached reads" are
GETs and LISTs that no informer sent (an informer's list carries a resourceVersion parameter, and with
client-go's watch-list its initial state comes through a watch). Counting at the process's transport was the
alternative; it would need a hook in the At's main, and the server's log cannot miss a client.

**Phases.** A request belongs to the phase in which the server received it (requestReceivedTimestamp):
*startup* (process start until it leads and its informers watch Ats and Pods), *created → DONE* (the first At
created until every At is DONE and the process has sent no write and no uncached read for %s),
*resync* (the process stopped with SIGTERM and a new one started on the DONE Ats, until it has reconciled each
once and is quiet: the At binary has no sync-period flag, so a restart is how every DONE At gets reconciled
again; informer lists/watches, the Lease and discovery are reported apart), *deleting DONE Ats* (every At
deleted until all are gone and the process is quiet). Reconciles are controller-runtime's own counter
(controller_runtime_reconcile_total, every result) scraped from the process's metrics endpoint at the end of
each phase.

**Time.** "schedule → all DONE" is from the (last) schedule until the harness's watch saw the last At DONE.
"Pod create received − schedule" is, per At, the audit log's requestReceivedTimestamp of the controller's
first accepted Pod create minus spec.schedule. "API server time per accepted write" is the audit log's
stageTimestamp minus requestReceivedTimestamp of the controller's accepted writes: how long the (shared,
saturated) server took to answer. "Mean reconcile duration" and "CPU time" come from the process's metrics
(controller_runtime_reconcile_time_seconds, process_cpu_seconds_total) at the end of created → DONE, and so
does "reads that waited for the cache" (reconcilekit_stale_reads_total, the freshness guard's counter; on
controller-runtime's guard, the reads its consistency histogram saw held for more than 5 ms; the yardsticks have no
guard and never wait). "kube-apiserver CPU time" and "etcd CPU time" are the
control plane's own CPU (utime + stime from /proc/<pid>/stat of the plane's two processes) over created → DONE,
and for the API server also from the (last) schedule to the end of that phase, divided by the number of Ats.
The harness's share (creating the Ats, playing the kubelet, watching) is the same for every controller except
that its watches carry each controller's writes and that a longer phase holds more idle server work (Lease
renewals, bookkeeping): both count against the slower controller, so the difference is an upper bound on what
the controller's own requests and watches cost the server.

**Memory.** The resident memory of the controller process: VmHWM from /proc/<pid>/status (the kernel's
peak, read at the end of created → DONE, before the process is stopped), and VmRSS sampled every 100 ms.
With unrelated Pods, %s Pods that no At owns (no labels, no owner, in a namespace of their own) exist from
before the controllers start until the scenario ends.
`, cmp.plan.pace, instantAhead, spreadAhead, podRunTime, controllerGroup, quietPeriod, strconv.Itoa(cmp.plan.unrelated))
	if cmp.plan.profiles != "" {
		how := "its --pprof-bind-address flag"
		if cmp.atPprof == "overlay" {
			how = "net/http/pprof added at build time by the harness (`go build -overlay`; the At binary has no pprof flag, main.go is unchanged)"
		}
		fmt.Fprintf(&b, "\n**Profiles.** A CPU profile of each process during the first scenario, %s from the start of creation, and a heap profile once every At is DONE, into %s; the At binary serves pprof through %s, the yardsticks through --pprof-bind-address.\n",
			cmp.plan.profileFor, cmp.plan.profiles, how)
	}
	return b.String()
}

// verdict formats a goal's outcome.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// headings are the controllers' names in the report.
func headings(ks []kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.heading()
	}
	return out
}

// goal is a figure of the library's At that issue 26 bounds by the
// hand-written At's: their ratio, median of the rounds, at most limit.
type goal struct {
	metric string
	of     func(*run) float64
	format func(float64) string
	limit  float64
}

// likeForLikeGoals are issue 26's goals.
func likeForLikeGoals() []goal {
	sec := func(d time.Duration) float64 { return d.Seconds() }
	return []goal{
		{"accepted writes per At, created → DONE (events included)", perAt(func(r *run) int { return total(accepted(r.lifecycle)) }), nil, 1.0},
		{"all DONE after the (last) schedule", func(r *run) float64 { return sec(r.allDone) }, bench.Millis, 1.0},
		{"Pod create received − schedule, p99", func(r *run) float64 { return sec(r.podLag.P99) }, bench.Millis, 1.0},
		{"CPU time of the process, start → all DONE", func(r *run) float64 { return r.cpu }, seconds, 1.0},
		{"control plane CPU per At (kube-apiserver + etcd), created → DONE", func(r *run) float64 {
			return sec(r.planeLifecycle.apiserver+r.planeLifecycle.etcd) / float64(r.sc.n)
		}, tenthMillis, 1.0},
		{"peak RSS of the process (VmHWM)", func(r *run) float64 { return float64(r.hwm) }, bench.MiB, 1.05},
		{"accepted writes per At, deleting DONE Ats", perAt(func(r *run) int { return total(accepted(r.deletion)) }), nil, 1.0},
		{"requests beyond watches, Lease and discovery, resyncing DONE Ats", func(r *run) float64 { return float64(count(r.resync, beyondWatches)) }, nil, 1.0},
	}
}

// spread formats the median of values with their range, "v (lo–hi)", or
// "v" for a single value.
func spread(values []float64, format func(float64) string) string {
	if format == nil {
		format = bench.Number
	}
	med, lo, hi := bench.Spread(values)
	if len(values) < 2 {
		return format(med)
	}
	return fmt.Sprintf("%s (%s–%s)", format(med), format(lo), format(hi))
}

func ratioFormat(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "×" }

// headline is the report's summary: the library's At against the
// hand-written one, judged by issue 26's goals; against the naive floor;
// and the At on controller-runtime's guard against the At on freshness
// (issue 22).
func headline(cmp comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**reconcilekit ÷ hand-written** (issue 26): the At operator as it ships against the same At written by hand on\n"+
		"controller-runtime alone, recording exactly the same (status, conditions, events, finalizer; proven field by field by\n"+
		"`TestTheHandWrittenAtRecordsWhatTheLibraryAtRecords`). Each value is the median of the rounds, with their range\n"+
		"in brackets; each ratio the median of the rounds' ratios (each round runs both controllers on the same server,\n"+
		"one after the other), with its range. A goal is met when the median ratio is at most its limit.\n\n")
	b.WriteString("| scenario | metric | hand-written | reconcilekit | reconcilekit ÷ hand-written | goal | |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, t := range cmp.trials {
		if !t.has(handwrittenAt) || !t.has(libraryAt) {
			continue
		}
		for _, g := range likeForLikeGoals() {
			ratios := t.ratios(libraryAt, handwrittenAt, g.of)
			med, _, _ := bench.Spread(ratios)
			v := "–"
			if len(ratios) > 0 {
				v = verdict(med <= g.limit)
			} else if bench.Number(g.of(t.rounds[0].runs[libraryAt])) == "0" {
				v = "met (both 0)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | ≤ %s× | %s |\n", t.sc, g.metric, spread(t.values(handwrittenAt, g.of), g.format),
				spread(t.values(libraryAt, g.of), g.format), spread(ratios, ratioFormat), bench.Number(g.limit), v)
		}
	}
	fmt.Fprintf(&b, "\n**Against the naive floor**: the cnat-style controller that records nothing (no conditions, no events,\n"+
		"no finalizer). What recording costs is the hand-written column over this one; the library adds its own cost\n"+
		"on top only where reconcilekit ÷ hand-written is above 1.\n\n")
	b.WriteString("| scenario | metric | naive | hand-written | reconcilekit | reconcilekit ÷ naive |\n|---|---|---:|---:|---:|---:|\n")
	for _, t := range cmp.trials {
		if !t.has(classicAt) || !t.has(libraryAt) {
			continue
		}
		for _, g := range likeForLikeGoals() {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.sc, g.metric, spread(t.values(classicAt, g.of), g.format),
				spread(t.values(handwrittenAt, g.of), g.format), spread(t.values(libraryAt, g.of), g.format),
				spread(t.ratios(libraryAt, classicAt, g.of), ratioFormat))
		}
	}
	for _, t := range cmp.trials {
		if !t.has(upstreamGuardAt) {
			continue
		}
		fmt.Fprintf(&b, "\n**controller-runtime's guard against freshness** (issue 22), %s: the same At binary with\n"+
			"`--read-your-writes=controller-runtime` (controller-runtime's consistency client on the manager; the At's own\n"+
			"Tracker then has no informers and never finds a stale read) and as it ships (`freshness`).\n"+
			"\"Reads that waited\" are `reconcilekit_stale_reads_total` for freshness, and for controller-runtime the reads its\n"+
			"`controller_runtime_client_consistency_wait_duration_seconds` histogram saw held for more than 5 ms.\n\n", t.sc)
		b.WriteString("| metric | reconcilekit (freshness) | on controller-runtime's guard | controller-runtime ÷ freshness |\n|---|---:|---:|---:|\n")
		figs := []goal{{metric: "reads that waited for the cache, per At", of: func(r *run) float64 { return r.staleReads / float64(r.sc.n) }}}
		figs = append(figs, likeForLikeGoals()...)
		figs = append(figs, goal{metric: "refused writes (409) per At, created → DONE", of: perAt(func(r *run) int { return count(r.lifecycle, isRefusedWrite) })})
		for _, g := range figs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", g.metric, spread(t.values(libraryAt, g.of), g.format),
				spread(t.values(upstreamGuardAt, g.of), g.format), spread(t.ratios(upstreamGuardAt, libraryAt, g.of), ratioFormat))
		}
	}
	var base *trial
	for i, t := range cmp.trials {
		switch {
		case t.sc.spread == 0 && t.sc.unrelated == 0 && base == nil:
			base = &cmp.trials[i]
		case t.sc.unrelated > 0 && base != nil && base.sc.n == t.sc.n && base.sc.workers == t.sc.workers:
			fmt.Fprintf(&b, "\n**Memory with %d unrelated Pods** (Pods no At owns, in another namespace): peak RSS, %s without them → with them.\n\n",
				t.sc.unrelated, base.sc)
			b.WriteString("| controller | without | with | growth |\n|---|---:|---:|---:|\n")
			hwm := func(r *run) float64 { return float64(r.hwm) }
			for _, k := range t.kinds {
				without, _, _ := bench.Spread(base.values(k, hwm))
				with, _, _ := bench.Spread(t.values(k, hwm))
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", k.heading(), bench.MiB(without), bench.MiB(with), growth(uint64(with), uint64(without)))
			}
		}
	}
	return b.String()
}

func growth(after, before uint64) string {
	if before == 0 {
		return "–"
	}
	return fmt.Sprintf("%+.0f%%", (float64(after)/float64(before)-1)*100)
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
	"`TestShardedAtsAreEachWrittenOnceByTheHolderOfTheirRange`: the At binary sharded over 6 ranges (4 s lease, 500 ms retry period), each replica its own process and user, on 500 Ats (`-at.proof.n`; 3,000 in issue 25) created over 60 s and due over 80 s, with the gate ShardedListAndWatch off and, at the same time on a plane of its own, on; 1 → 3 replicas, a graceful stop, a fourth joining, a kill -9. From the audit log: every At DONE with exactly one Pod; one Pod create, one finalizer patch and one status write per status (each a step forward) per At, nothing else; every write to an At or its Pod received while its writer held the At's range (holdings rebuilt from the Lease writes, which follow leader election's rules); the stopped replica's ranges held by others within 2 s, the killed one's within the lease duration plus two retry periods.",
}

// packageTable renders go test -bench results of the library's packages:
// each row's ns/op over that of the baseline of its group (see isBaseline;
// nested sub-benchmarks take the nearest group that has one), the baseline
// named in its own column; custom units (requests/op, B/entry) in a column
// of their own.
func packageTable(results []bench.GoBench) string {
	var b strings.Builder
	b.WriteString("| package | benchmark | ns/op | B/op | allocs/op | other units | compared with | ns/op ÷ that |\n|---|---|---:|---:|---:|---|---|---:|\n")
	type group struct{ pkg, name string }
	baseline := map[group]bench.GoBench{}
	for _, r := range results {
		parent, sub := splitLast(r.Name)
		if g := (group{r.Package, parent}); isBaseline(sub) {
			if _, ok := baseline[g]; !ok {
				baseline[g] = r
			}
		}
	}
	for _, r := range results {
		value := func(unit string) string {
			if v, ok := r.Metrics[unit]; ok {
				return bench.Number(v)
			}
			return "–"
		}
		var other []string
		for _, unit := range slices.Sorted(maps.Keys(r.Metrics)) {
			if unit != "ns/op" && unit != "B/op" && unit != "allocs/op" {
				other = append(other, bench.Number(r.Metrics[unit])+" "+unit)
			}
		}
		with, ratio := "–", "–"
		for g := r.Name; g != ""; {
			g, _ = splitLast(g)
			base, ok := baseline[group{r.Package, g}]
			if !ok {
				continue
			}
			if base.Name != r.Name {
				_, sub := splitLast(base.Name)
				with = "`" + sub + "`"
				if n, d := r.Metrics["ns/op"], base.Metrics["ns/op"]; n > 0 && d > 0 {
					ratio = bench.FormatRatio(n, d)
				}
			}
			break
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %s |\n", path.Base(r.Package), r.Name, value("ns/op"),
			value("B/op"), value("allocs/op"), strings.Join(other, ", "), with, ratio)
	}
	return b.String()
}

// splitLast splits a benchmark name at its last "/": the group and the
// sub-benchmark; the group is empty for a top-level name.
func splitLast(name string) (parent, sub string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// isBaseline names the sub-benchmarks the others of their group are
// compared with: for the comparison engine, compare.Diff itself (the
// alternatives are compared with it); elsewhere what the library's code is
// measured against (a plain client, a deep copy, controller-runtime's
// MergeFrom, the status writer's former whole-object encoding).
func isBaseline(sub string) bool {
	return sub == "compare.Diff" || sub == "plain" || sub == "whole-object" || strings.HasPrefix(sub, "baseline")
}

// vcsRevision is the commit checked out in the repository, from git; test
// binaries carry no VCS stamp. A working tree with changes is marked.
func vcsRevision() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += " (with uncommitted changes)"
	}
	return rev
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

// discoverVersion asks the API server of pl for its version.
func discoverVersion(tb testing.TB, pl *plane) string {
	tb.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(pl.cfg)
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
