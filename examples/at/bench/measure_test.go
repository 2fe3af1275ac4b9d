package bench_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/classic"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// scenario is one measured run of one controller.
type scenario struct {
	// n Ats are created, scheduled at the same instant (spread 0) or
	// evenly over spread.
	n      int
	spread time.Duration
}

// podRunTime is how long the harness's kubelet lets each Pod run before it
// completes it. A command that exits the instant its Pod is created is not
// realistic, and the library's At controller loses such a Pod's completion
// when its cache lags (see TestAStaleCachedAtDoesNotLoseItsPodsCompletion).
const podRunTime = time.Second

// measurement is what one run of one controller measured.
type measurement struct {
	// writes counts the controller's write requests that the server
	// accepted, by verb, from the Ats' creation until every one is DONE;
	// deleteWrites from their deletion until they are gone.
	writes, deleteWrites map[reconciletest.Verb]int
	// failedWrites is how many write requests (of the whole lifecycle) the
	// server refused, such as optimistic-lock conflicts.
	failedWrites int
	// reconciles over the whole lifecycle.
	reconciles float64
	// resyncWrites is how many writes one reconcile of each DONE At made.
	resyncWrites int
	// allDone is the time from the last schedule to the last At DONE.
	allDone time.Duration
	// peakHeap is the peak growth of the process's live heap during the
	// run, above the heap before the controller started.
	peakHeap uint64
	// apiReads is how many uncached reads (straight to the API server)
	// the controller made over the whole lifecycle; its cached reads cost
	// the server nothing and are not counted.
	apiReads int
	// precision is, per At, Pod creation (accepted by the API server) minus
	// spec.schedule.
	precision bench.Distribution
	// podsPerAt is the largest number of Pods the kubelet saw for one At.
	podsPerAt int
	// late is true when some Ats were created after their schedule: they
	// may skip PENDING, so their write counts are not comparable.
	late bool
}

// failed is the pseudo-verb under which countWrites counts refused writes.
const failed reconciletest.Verb = "(failed)"

// countWrites counts the writes the server accepted by verb, and under
// failed those it refused.
func countWrites(ws []reconciletest.APIRequest) map[reconciletest.Verb]int {
	m := map[reconciletest.Verb]int{}
	for _, w := range ws {
		if w.Err != nil {
			m[failed]++
			continue
		}
		m[w.Verb]++
	}
	return m
}

func total(m map[reconciletest.Verb]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// measure runs one controller through the scenario in a fresh namespace:
// create the Ats, wait until every one is DONE, reconcile each DONE At once
// more (a resync), delete them all and wait until they are gone.
func measure(tb testing.TB, k kind, s scenario) measurement {
	tb.Helper()
	ns := env.Namespace(tb)
	c := env.Client(tb)
	kl := startKubelet(tb, ns, podRunTime)
	tr := startTracker(tb, ns)

	var counter, apiReads reconciletest.Counter
	creates := &createLog{}
	heap := startHeapSampler()
	before := reconciles(tb, k.controllerName())
	run := startController(tb, k, ns, wiring{counter: &counter, apiReads: &apiReads, creates: creates})

	// Leave time to create every At before the first schedule, so that
	// creation does not bias the precision.
	first := time.Now().Add(2*time.Second + time.Duration(s.n)*15*time.Millisecond)
	ats := make([]*atv1.At, s.n)
	schedules := map[string]time.Time{}
	last := first
	for i := range ats {
		when := first
		if s.n > 1 {
			when = first.Add(s.spread * time.Duration(i) / time.Duration(s.n-1))
		}
		when = when.Truncate(time.Millisecond)
		name := fmt.Sprintf("at-%05d", i)
		ats[i] = newAt(ns, name, when)
		schedules[name] = when
		last = when
	}
	createAll(tb, c, ats)
	late := time.Since(first)
	if late > 0 {
		tb.Logf("%s: creating %d Ats ended %s after the first schedule: precision includes that delay", k, s.n, late)
	}
	lastDone := tr.waitDone(tb, s.n, s.spread+2*time.Minute+time.Duration(s.n)*100*time.Millisecond)
	m := measurement{allDone: lastDone.Sub(last), peakHeap: heap.growth(), late: late > 0}
	m.writes = countWrites(counter.Writes())
	counter.Reset()

	// A resync: every DONE At reconciled once more, straight through the
	// reconciler with a counted client.
	var resync reconciletest.Counter
	rc := resync.Wrap(env.Client(tb))
	var r crreconcile.Reconciler
	if k == classicAt {
		r = &classic.Reconciler{Client: rc, Scheme: env.Scheme}
	} else {
		loop, err := controller.New(controller.Options{Client: rc, Scheme: env.Scheme})
		if err != nil {
			tb.Fatal(err)
		}
		r = loop
	}
	for _, at := range ats {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)}); err != nil {
			tb.Fatalf("resync of %s: %v", at.Name, err)
		}
	}
	m.resyncWrites = len(resync.Writes())
	if m.resyncWrites > 0 {
		tb.Logf("%s: resync writes: %v", k, resync.Writes())
	}

	deleteAll(tb, c, ns)
	tr.waitGone(tb, time.Minute+time.Duration(s.n)*50*time.Millisecond)
	run.stop()
	m.reconciles = reconciles(tb, k.controllerName()) - before

	m.deleteWrites = countWrites(counter.Writes())
	m.apiReads = len(apiReads.Requests())
	m.failedWrites = m.writes[failed] + m.deleteWrites[failed]
	delete(m.writes, failed)
	delete(m.deleteWrites, failed)
	var delays []time.Duration
	for name, times := range creates.byAt() {
		delays = append(delays, times[0].Sub(schedules[name]))
	}
	m.precision = bench.Summarize(delays)
	for _, n := range kl.podsSeen() {
		m.podsPerAt = max(m.podsPerAt, n)
	}
	if m.precision.N != s.n {
		tb.Errorf("%s: %d Ats got a Pod, want %d", k, m.precision.N, s.n)
	}
	return m
}

// comparison is both controllers measured on both scenarios.
type comparison struct {
	n                  int
	spread             time.Duration
	instant, spreadOut map[kind]measurement
}

// compare measures both controllers, one after the other, each in its own
// namespace: first n Ats scheduled at the same instant, then n Ats spread
// evenly over spread.
// The caller holds the managers' lock.
func compare(tb testing.TB, n int, spread time.Duration) comparison {
	tb.Helper()
	cmp := comparison{n: n, spread: spread, instant: map[kind]measurement{}, spreadOut: map[kind]measurement{}}
	for _, k := range []kind{classicAt, libraryAt} {
		cmp.instant[k] = measure(tb, k, scenario{n: n})
	}
	// The other order for the second scenario, so that neither controller
	// always runs against the fuller etcd.
	for _, k := range []kind{libraryAt, classicAt} {
		cmp.spreadOut[k] = measure(tb, k, scenario{n: n, spread: spread})
	}
	return cmp
}

// table renders the comparison.
func (cmp comparison) table() *bench.Table {
	t := &bench.Table{Baseline: "classic", Ours: "reconcilekit"}
	ci, oi := cmp.instant[classicAt], cmp.instant[libraryAt]
	cs, os := cmp.spreadOut[classicAt], cmp.spreadOut[libraryAt]
	per := func(v int) float64 { return float64(v) / float64(cmp.n) }
	sec := func(d time.Duration) float64 { return d.Seconds() }

	t.Add(fmt.Sprintf("writes on resync of %d DONE Ats (total)", cmp.n), float64(ci.resyncWrites), float64(oi.resyncWrites), nil)
	t.Add("lifecycle: accepted writes per At, created → DONE", per(total(cs.writes)), per(total(os.writes)), nil)
	for _, v := range verbsOf(cs.writes, os.writes) {
		t.Add(fmt.Sprintf("  created → DONE: `%s` per At", v), per(cs.writes[v]), per(os.writes[v]), nil)
	}
	t.Add("lifecycle: accepted writes per At, deleted → gone", per(total(cs.deleteWrites)), per(total(os.deleteWrites)), nil)
	for _, v := range verbsOf(cs.deleteWrites, os.deleteWrites) {
		t.Add(fmt.Sprintf("  deleted → gone: `%s` per At", v), per(cs.deleteWrites[v]), per(os.deleteWrites[v]), nil)
	}
	t.Add("lifecycle: write requests refused (409 conflicts) per At", per(cs.failedWrites), per(os.failedWrites), nil)
	t.Add("lifecycle: uncached reads (GET to the API server) per At", per(cs.apiReads), per(os.apiReads), nil)
	t.Add("lifecycle: all API requests per At (writes, refused writes, uncached reads)",
		per(total(cs.writes)+total(cs.deleteWrites)+cs.failedWrites+cs.apiReads),
		per(total(os.writes)+total(os.deleteWrites)+os.failedWrites+os.apiReads), nil)
	t.Add("lifecycle: reconciles per At, created → gone", cs.reconciles/float64(cmp.n), os.reconciles/float64(cmp.n), nil)
	t.Add(fmt.Sprintf("scale, %d at one instant: schedule → all DONE", cmp.n), sec(ci.allDone), sec(oi.allDone), bench.Millis)
	t.Add(fmt.Sprintf("scale, %d at one instant: reconciles per At, created → gone", cmp.n), ci.reconciles/float64(cmp.n), oi.reconciles/float64(cmp.n), nil)
	t.Add(fmt.Sprintf("scale, %d at one instant: all API requests per At", cmp.n),
		per(total(ci.writes)+total(ci.deleteWrites)+ci.failedWrites+ci.apiReads),
		per(total(oi.writes)+total(oi.deleteWrites)+oi.failedWrites+oi.apiReads), nil)
	t.Add(fmt.Sprintf("scale, %d at one instant: write requests refused (409 conflicts) per At", cmp.n), per(ci.failedWrites), per(oi.failedWrites), nil)
	t.Add(fmt.Sprintf("scale, %d at one instant: peak heap growth", cmp.n), float64(ci.peakHeap), float64(oi.peakHeap), bench.MiB)
	t.Add(fmt.Sprintf("scale, %d at one instant: Pod created − schedule, p50", cmp.n), sec(ci.precision.P50), sec(oi.precision.P50), bench.Millis)
	t.Add(fmt.Sprintf("scale, %d at one instant: Pod created − schedule, p99", cmp.n), sec(ci.precision.P99), sec(oi.precision.P99), bench.Millis)
	t.Add(fmt.Sprintf("scale, %d over %s: last schedule → all DONE", cmp.n, cmp.spread), sec(cs.allDone), sec(os.allDone), bench.Millis)
	t.Add(fmt.Sprintf("scale, %d over %s: peak heap growth", cmp.n, cmp.spread), float64(cs.peakHeap), float64(os.peakHeap), bench.MiB)
	t.Add(fmt.Sprintf("precision, %d over %s: Pod created − schedule, p50", cmp.n, cmp.spread), sec(cs.precision.P50), sec(os.precision.P50), bench.Millis)
	t.Add(fmt.Sprintf("precision, %d over %s: Pod created − schedule, p99", cmp.n, cmp.spread), sec(cs.precision.P99), sec(os.precision.P99), bench.Millis)
	t.Add(fmt.Sprintf("precision, %d over %s: Pod created − schedule, max", cmp.n, cmp.spread), sec(cs.precision.Max), sec(os.precision.Max), bench.Millis)
	return t
}

func verbsOf(ms ...map[reconciletest.Verb]int) []reconciletest.Verb {
	verbs := map[reconciletest.Verb]bool{}
	for _, m := range ms {
		for v := range maps.Keys(m) {
			verbs[v] = true
		}
	}
	return slices.Sorted(maps.Keys(verbs))
}

// TestSideBySideSmoke runs the benchmark's scenarios at 20 Ats so that the
// harness cannot rot, and checks the counts (never the timings) that the
// library promises: no write on resync of a DONE At, at most one write per
// At more than the classic controller over a lifecycle (the finalizer), one
// Pod per At. Write requests the server refused (optimistic-lock
// conflicts) are reported, not held to that bound.
func TestSideBySideSmoke(t *testing.T) {
	env.Require(t)
	lockManagers(t)
	started := time.Now()
	cmp := compare(t, 20, 3*time.Second)
	table := cmp.table().Markdown()
	t.Logf("side by side, 20 Ats:\n%s", table)

	// The report that make bench writes, from these figures.
	diff, err := bench.ParseGoBench(strings.NewReader("BenchmarkCompareEqual/reconcile.Diff-2 10 1000 ns/op 10 B/op 1 allocs/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	report := renderReport(t, cmp, table, diff, started, loadAverage())
	for _, want := range []string{table, "| no write when resyncing DONE Ats | 0 writes for 20 Ats | met |", "`BenchmarkCompareEqual/reconcile.Diff` | 1000 | 10 | 1 | 1.00 |", "| kube-apiserver | v1."} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	for name, ms := range map[string]map[kind]measurement{"one instant": cmp.instant, "spread": cmp.spreadOut} {
		for k, m := range ms {
			if m.podsPerAt != 1 {
				t.Errorf("%s, %s: up to %d Pods for one At, want 1", name, k, m.podsPerAt)
			}
		}
		if w := ms[libraryAt].resyncWrites; w != 0 {
			t.Errorf("%s: reconcilekit wrote %d times resyncing DONE Ats, want 0", name, w)
		}
	}
	// The bound on writes holds for Ats that go through every phase: in the
	// spread scenario, when every At was created before its schedule (an
	// At first seen after it skips PENDING, in either controller).
	if ms := cmp.spreadOut; ms[libraryAt].late || ms[classicAt].late {
		t.Logf("some Ats were created after their schedule: their write counts are not comparable")
	} else {
		name := "spread"
		ours, theirs := total(ms[libraryAt].writes), total(ms[classicAt].writes)
		if ours > theirs+cmp.n {
			t.Errorf("%s: reconcilekit made %d accepted writes for %d Ats from creation to DONE, classic %d: want at most classic + 1 per At\nreconcilekit: %v\nclassic: %v",
				name, ours, cmp.n, theirs, ms[libraryAt].writes, ms[classicAt].writes)
		}
	}
}
