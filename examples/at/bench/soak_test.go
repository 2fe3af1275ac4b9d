package bench_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/internal/restart"
)

// The soak (issue 50): the At and its hand-written twin, each on a control
// plane of its own, run the same waves of Ats side by side, wave after
// wave, each At name used once; see soak.
var (
	soakFor = flag.Duration("at.soak.for", 0,
		"run the soak's waves until this long has passed (both controllers the same waves; 0 with -at.soak.waves 0: no soak)")
	soakWaves  = flag.Int("at.soak.waves", 0, "run exactly this many waves in the soak (0: as many as -at.soak.for takes)")
	soakN      = flag.Int("at.soak.n", 1000, "Ats per wave of the soak")
	soakReport = flag.String("at.soak.report", "", "BenchmarkSoak: replace the soak's section of this report (BENCHMARKS.md) with its figures")
	soakOutage = flag.Duration("at.soak.outage", 0,
		"after the soak's waves, stop both API servers this long during one more wave, whose Ats fall due while they are down (0: no outage)")
	soakProfiles = flag.String("at.soak.heapprofiles", "",
		"write each controller's heap profile (after a forced collection) at the end of every wave into this directory, as <controller>-w<wave>.heap.pprof, for go tool pprof -diff_base; the controllers then sample one allocation in 4 KiB (GODEBUG=memprofilerate=4096) rather than one in 512 KiB")
)

// soakPlan is what the soak runs.
type soakPlan struct {
	// n Ats per wave, at one instant, created pace apart.
	n    int
	pace time.Duration
	// waves, when above zero, is how many waves run; otherwise waves run
	// until runFor has passed.
	waves  int
	runFor time.Duration
	// outage, when above zero, is how long the API servers are down
	// during the outage wave.
	outage time.Duration
}

func (p soakPlan) enabled() bool { return p.n > 0 && (p.waves > 0 || p.runFor > 0) }

// soakPlanOfFlags is the soak the flags describe.
func soakPlanOfFlags() soakPlan {
	return soakPlan{n: *soakN, pace: *pace, waves: *soakWaves, runFor: *soakFor, outage: *soakOutage}
}

// soakKinds are the controllers of the soak, each on a plane of its own.
var soakKinds = []kind{libraryAt, handwrittenAt}

// failingNamespace holds, on each plane, the At meant to fail at every
// reconcile for the whole soak: the API server refuses its Pod, by a
// ResourceQuota of zero Pods (refuseEveryPod).
const failingNamespace = "soak-failing"

// soakSample is what one controller process holds at one moment, read
// after a forced garbage collection.
type soakSample struct {
	// heap is the Go heap in use (runtime.MemStats.HeapInuse: the spans
	// that hold objects, their free room included) right after a
	// collection, live the bytes of the objects it holds then (HeapAlloc);
	// goroutines the process's goroutines (go_goroutines); rss its
	// resident memory (VmRSS).
	heap, live, goroutines, rss float64
	// entries are the library's maps, by series
	// ("reconcilekit_freshness_entries{map=\"writes\"}"); none for the
	// hand-written At.
	entries map[string]float64
}

// soakWave is one wave of one controller: measured at its end, once its
// Ats are gone, their Pods deleted, and the controller quiet.
type soakWave struct {
	wave int
	soakSample
	// eventWrites are the Event writes (creates and patches accepted) of
	// the controller during the wave; took how long the wave took.
	eventWrites int
	took        time.Duration
	// done is how many of the wave's Ats were seen DONE, and lastDone
	// when the last of them was.
	done     int
	lastDone time.Time
	// doubled is how many of the wave's Ats got more than one Pod, podless
	// how many got none; stuck how many were still there (their finalizer
	// not removed by the controller) when the wave gave up waiting for
	// their deletion.
	doubled, podless, stuck int
}

// soakSide is one controller of the soak and its plane.
type soakSide struct {
	kind kind
	pl   *plane
	p    *proc
	tail *auditTail
	// api restarts the plane's kube-apiserver, for the outage.
	api *restart.APIServer
}

// outageSample is both controllers at one moment of the outage.
type outageSample struct {
	at      time.Duration // since the API servers stopped
	samples map[kind]soakSample
}

// soakOutcome is what the outage wave showed of one controller: how it
// stood just before the API servers stopped (the samples during the
// outage follow), how many of its Ats ended DONE, and, when all did, how
// long after the API servers were back the last did. That nothing was
// doubled the wave checks itself; that nothing was lost too, for the
// library's At (see soakSide.wave).
type soakOutcome struct {
	before soakSample
	done   int
	after  time.Duration
}

// soakResult is the soak of both controllers.
type soakResult struct {
	plan  soakPlan
	waves map[kind][]soakWave
	// started and took: when the first wave began and how long the waves
	// took, the outage wave aside.
	started time.Time
	took    time.Duration
	// failing, per controller: its Event writes about the failing At over
	// the whole soak, and how often the API server refused that At's Pod
	// (each refusal is a reconcile that failed).
	failingEvents, failingAttempts map[kind]int
	// all is how long the whole soak took, the outage wave included: the
	// time over which the failing At's Event writes are counted.
	all time.Duration
	// outage, when run: samples during it, and what each controller did.
	outage         []outageSample
	outageOutcomes map[kind]soakOutcome
	outageWave     map[kind]soakWave
}

// BenchmarkSoak runs the soak alone (see soak) and prints its section of
// the report: a way to try it at a short setting without the rest of
// make bench, e.g. -at.soak.waves=3 -at.soak.n=100 -at.soak.outage=30s.
func BenchmarkSoak(b *testing.B) {
	pn := soakPlanOfFlags()
	if !pn.enabled() {
		b.Skip("no soak asked for: set -at.soak.for or -at.soak.waves")
	}
	started := time.Now().UTC()
	var res soakResult
	for range b.N {
		res = soak(b, buildBinaries(b, true), pn)
	}
	fmt.Printf("\n%s", soakSection(res))
	if *soakReport == "" {
		return
	}
	old, err := os.ReadFile(*soakReport)
	if err != nil {
		b.Fatal(err)
	}
	section := fmt.Sprintf("Measured %s by `%s` (the `soak` target of the Makefile: this section alone, apart from the run\n"+
		"the rest of this file comes from), at commit %s, no -race; `make bench` measures it again with the rest.\n\n%s",
		started.Format("2006-01-02 15:04 UTC"), *commandLine, vcsRevision(), soakSection(res))
	if err := os.WriteFile(*soakReport, []byte(spliceSection(string(old), soakHeading, section, "## The packages")), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote the soak's section of %s", *soakReport)
}

// soakHeading is the heading of the soak's section of the report.
const soakHeading = "## Runs for months: the soak (issue 50)"

// spliceSection returns report with the section under heading (up to the
// next heading of its level) replaced by body; a report without that
// section gets it before the heading that starts with before, or at its
// end.
func spliceSection(report, heading, body, before string) string {
	section := heading + "\n\n" + strings.TrimRight(body, "\n") + "\n"
	if i := strings.Index(report, "\n"+heading+"\n"); i >= 0 {
		start := i + 1
		end := len(report)
		if j := strings.Index(report[start+len(heading):], "\n## "); j >= 0 {
			end = start + len(heading) + j + 1
			section += "\n"
		}
		return report[:start] + section + report[end:]
	}
	if i := strings.Index(report, "\n"+before); i >= 0 {
		return report[:i+1] + section + "\n" + report[i+1:]
	}
	return strings.TrimRight(report, "\n") + "\n\n" + section
}

// soak runs the At and its hand-written twin, each on an audited control
// plane of its own and without leader election (one replica: nothing makes
// it exit when the API server is gone), through the same waves side by
// side. A wave creates pn.n Ats due at one instant in a namespace of its
// own (no At name is ever used twice), runs them to DONE, deletes them and
// their Pods (as the garbage collector envtest lacks would), waits until the
// controller is quiet, and measures it: heap in use after a forced garbage
// collection, goroutines, RSS, and the size of each of the library's maps
// (its _entries gauges). One At, in failingNamespace, fails at every
// reconcile from the first wave to the last. With pn.outage, one more wave
// creates its Ats due while both API servers are down for pn.outage, the
// controllers sampled every 30 s meanwhile; then every At must end DONE
// with exactly one Pod.
func soak(tb testing.TB, bins binaries, pn soakPlan) soakResult {
	tb.Helper()
	res := soakResult{plan: pn, waves: map[kind][]soakWave{}, failingEvents: map[kind]int{}, failingAttempts: map[kind]int{}}
	sides := make([]*soakSide, len(soakKinds))
	for i, k := range soakKinds {
		sides[i] = startSoakSide(tb, bins, k)
	}
	res.started = time.Now()
	for w := 1; ; w++ {
		waves := eachSide(tb, sides, func(s *soakSide) soakWave { return s.wave(tb, w, pn, nil) })
		for i, s := range sides {
			res.waves[s.kind] = append(res.waves[s.kind], waves[i])
		}
		tb.Logf("soak: wave %d done after %s: %s", w, time.Since(res.started).Round(time.Second), describeWave(waves))
		if (pn.waves > 0 && w >= pn.waves) || (pn.waves <= 0 && time.Since(res.started) >= pn.runFor) {
			break
		}
	}
	res.took = time.Since(res.started)
	if pn.outage > 0 {
		res.outageOutcomes, res.outageWave = map[kind]soakOutcome{}, map[kind]soakWave{}
		res.outage = runOutageWave(tb, sides, pn, &res)
	}
	res.all = time.Since(res.started)
	for _, s := range sides {
		for _, r := range s.tail.read(tb) {
			switch {
			case r.Namespace != failingNamespace:
			case r.Resource == "events" && r.Write() && r.Accepted():
				res.failingEvents[s.kind]++
			case r.Resource == "pods" && r.Verb == "create" && r.Code == http.StatusForbidden:
				res.failingAttempts[s.kind]++
			}
		}
	}
	return res
}

// eachSide runs f for every side at once and returns what each returned, in
// the order of sides. A side whose f fails the test (FailNow ends its
// goroutine) fails the soak once every side has returned.
func eachSide[T any](tb testing.TB, sides []*soakSide, f func(*soakSide) T) []T {
	tb.Helper()
	out := make([]T, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Go(func() { out[i] = f(s) })
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	return out
}

// startSoakSide starts a plane and the controller k on it, with pprof (for
// the forced collections), no leader election, and the failing At.
func startSoakSide(tb testing.TB, bins binaries, k kind) *soakSide {
	tb.Helper()
	pl := startPlane(tb)
	api, err := restart.Find(pl.cfg, "--audit-log-path="+pl.auditLog)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := api.Close(); err != nil {
			tb.Error(err)
		}
	})
	user := fmt.Sprintf("soak-%s", k)
	s := &soakSide{kind: k, pl: pl, api: api, tail: pl.tail(tb, user)}
	var env []string
	if *soakProfiles != "" {
		env = []string{"GODEBUG=memprofilerate=4096"}
	}
	s.p = startProc(tb, bins, k, user, procOptions{kubeconfig: pl.user(tb, user), workers: controller.DefaultWorkers, pprof: true,
		args: []string{"--leader-elect=false"}, env: env})
	if s.p.pprof == "" {
		tb.Fatalf("%s serves no pprof: the soak cannot force its garbage collections", k)
	}
	s.p.waitWatching(tb, s.tail, 2*time.Minute)
	pl.namespaceNamed(tb, failingNamespace)
	refuseEveryPod(tb, pl, failingNamespace)
	if err := pl.admin.Create(context.Background(), newAt(failingNamespace, "fails", time.Now())); err != nil {
		tb.Fatal(err)
	}
	return s
}

// refuseEveryPod makes the API server refuse every Pod created in ns, by a
// ResourceQuota of zero Pods whose status it writes itself: kube-apiserver's
// ResourceQuota admission judges a Pod by the quota's status.hard and
// status.used, which the quota controller of kube-controller-manager fills
// and envtest does not run. It returns once a Pod created there is refused
// (the admission plugin reads quotas through an informer of its own).
func refuseEveryPod(tb testing.TB, pl *plane, ns string) {
	tb.Helper()
	ctx := context.Background()
	zero := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: zero}}
	if err := pl.admin.Create(ctx, quota); err != nil {
		tb.Fatal(err)
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
	if err := pl.admin.Status().Update(ctx, quota); err != nil {
		tb.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "quota-probe-"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		err := pl.admin.Create(ctx, probe)
		switch {
		case apierrors.IsForbidden(err):
			return true, nil
		case err != nil:
			return false, err
		}
		return false, pl.admin.Delete(ctx, probe, client.GracePeriodSeconds(0))
	})
	if err != nil {
		tb.Fatalf("the ResourceQuota of %s refuses no Pod: %v", ns, err)
	}
}

// waitWatching waits until the process serves its metrics and its caches
// watch Ats and Pods (for a process without leader election).
func (p *proc) waitWatching(tb testing.TB, tail *auditTail, timeout time.Duration) {
	tb.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		if _, _, err := p.scrape("go_goroutines", nil); err != nil {
			return false, nil
		}
		watching := map[string]bool{}
		for _, r := range tail.read(tb) {
			if r.Verb == "watch" {
				watching[r.Resource] = true
			}
		}
		return watching["ats"] && watching["pods"], nil
	})
	if err != nil {
		tb.Fatalf("waiting for %s to watch: %v", p.name, err)
	}
}

// wave runs wave w on the side (see soak); during, when set, runs once the
// wave's Ats are created and before the wave waits for them to be DONE.
func (s *soakSide) wave(tb testing.TB, w int, pn soakPlan, during func()) soakWave {
	tb.Helper()
	start := time.Now()
	ns := s.pl.namespace(tb, fmt.Sprintf("soak-w%03d", w))
	kl := startKubeletOn(tb, s.pl.admin, ns, podRunTime)
	tr := startTrackerOn(tb, s.pl.admin, ns)
	defer kl.stop()
	defer tr.stop()
	ahead := instantAhead
	if during != nil {
		ahead = 30 * time.Second // due while the API server is down
	}
	due := start.Add(time.Duration(pn.n)*pn.pace + ahead).Truncate(time.Millisecond)
	ats := make([]*atv1.At, pn.n)
	for i := range ats {
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), due)
	}
	createPaced(tb, s.pl.admin, ats, pn.pace)
	if during != nil {
		during()
	}
	// From when the Ats are created, or for the outage wave from when the
	// API servers are back (during returns then).
	timeout := 5*time.Minute + time.Duration(pn.n)*100*time.Millisecond
	lastDone, done, err := tr.doneWithin(pn.n, timeout)
	switch {
	case err == nil:
	case during != nil && s.kind != libraryAt:
		// The outage wave measures whether each controller converges
		// after the outage: the hand-written At's not converging is a
		// finding the report states (see soakSection), not a failure of
		// the soak, which would hide how the library's At fared.
		tb.Logf("%s, after the outage: %v", s.kind, err)
	default:
		tb.Fatalf("%s: %v", s.kind, err)
	}
	deleteStart := time.Now()
	deleteEach(tb, s.pl.admin, ats)
	stuck := 0
	if during != nil && s.kind != libraryAt {
		// After the outage, the hand-written At may not finalize its Ats
		// in time either: a finding the report states, its Ats released
		// by removing their finalizers so that the soak can end.
		stuck = s.releaseStuck(tb, tr, timeout)
	} else {
		tr.waitGone(tb, timeout)
	}
	kl.stop()
	tr.stop()
	// Nothing lost (every At was DONE), nothing doubled: each At got
	// exactly one Pod.
	podless, doubled := s.checkOnePodEach(tb, kl, ats)
	deletePods(context.Background(), tb, s.pl, ns)
	s.tail.waitQuiet(tb, deleteStart, quietPeriod, time.Minute)
	out := soakWave{wave: w, soakSample: s.sample(tb), took: time.Since(start), done: done, lastDone: lastDone, doubled: doubled, podless: podless, stuck: stuck}
	if *soakProfiles != "" {
		s.p.heapProfile(tb, filepath.Join(*soakProfiles, fmt.Sprintf("%s-w%03d.heap.pprof", s.kind, w)))
	}
	for _, r := range between(s.tail.read(tb), start, time.Now()) {
		if r.Resource == "events" && r.Write() && r.Accepted() {
			out.eventWrites++
		}
	}
	return out
}

// releaseStuck waits until the tracked Ats are gone, for at most timeout,
// and then removes the finalizers of those still there and waits for them
// to go; it returns how many it released.
func (s *soakSide) releaseStuck(tb testing.TB, tr *tracker, timeout time.Duration) int {
	tb.Helper()
	var left []string
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		left = left[:0]
		for name, p := range tr.present {
			if p {
				left = append(left, name)
			}
		}
		return len(left) == 0, nil
	})
	for _, name := range left {
		at := &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: tr.ns, Name: name}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		if err := s.pl.admin.Patch(context.Background(), at, patch); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("%s: releasing At %s: %v", s.kind, name, err)
		}
	}
	if len(left) > 0 {
		tb.Logf("%s: %d Ats still there %s after their deletion: their finalizers removed", s.kind, len(left), timeout)
		tr.waitGone(tb, time.Minute)
	}
	return len(left)
}

// checkOnePodEach fails the test unless the kubelet saw exactly one Pod for
// each of the Ats, and returns how many Ats had none and how many more than
// one.
func (s *soakSide) checkOnePodEach(tb testing.TB, kl *kubelet, ats []*atv1.At) (none, doubled int) {
	tb.Helper()
	seen := kl.podsSeen()
	for _, at := range ats {
		n := seen[at.Name]
		switch {
		case n == 0:
			none++
		case n > 1:
			doubled++
		}
		if n != 1 {
			tb.Errorf("%s: At %s had %d Pods, want exactly 1", s.kind, at.Name, n)
		}
	}
	return none, doubled
}

// sample forces a garbage collection in the process and reads what it
// holds (see soakSample).
func (s *soakSide) sample(tb testing.TB) soakSample {
	tb.Helper()
	out, err := s.trySample()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// trySample is sample, for a goroutine that may not end the test.
func (s *soakSide) trySample() (soakSample, error) {
	var out soakSample
	var err error
	if out.heap, out.live, err = s.p.heapAfterGC(); err != nil {
		return out, fmt.Errorf("%s: %w", s.p.name, err)
	}
	g, n, err := s.p.scrape("go_goroutines", nil)
	if err != nil || n == 0 {
		return out, fmt.Errorf("%s: go_goroutines: %d samples, %v", s.p.name, n, err)
	}
	out.goroutines = g
	m, err := s.p.memory()
	if err != nil {
		return out, fmt.Errorf("%s: %w", s.p.name, err)
	}
	out.rss = float64(m.RSS)
	if out.entries, err = s.p.libraryEntries(); err != nil {
		return out, fmt.Errorf("%s: %w", s.p.name, err)
	}
	return out, nil
}

// heapAfterGC asks the process's pprof endpoint for its heap profile after
// a garbage collection (gc=1), in text (debug=1), whose runtime.MemStats
// part gives HeapInuse and HeapAlloc.
//
// It asks twice and reads the second answer: what a sync.Pool holds (the
// gzip writer of a /metrics scrape, a megabyte and more) survives one
// collection in the pool's victim cache, and would make the heap of one
// wave differ from the next by whether a scrape came just before.
func (p *proc) heapAfterGC() (inuse, alloc float64, err error) {
	for range 2 {
		if inuse, alloc, err = p.memStatsAfterGC(); err != nil {
			return 0, 0, err
		}
	}
	return inuse, alloc, nil
}

// memStatsAfterGC is one read of heapAfterGC: HeapInuse and HeapAlloc.
func (p *proc) memStatsAfterGC() (inuse, alloc float64, err error) {
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Get("http://" + p.pprof + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("heap profile: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	found := 0
	for sc.Scan() && found < 2 {
		line := sc.Text()
		for prefix, into := range map[string]*float64{"# HeapInuse = ": &inuse, "# HeapAlloc = ": &alloc} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				if *into, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					return 0, 0, err
				}
				found++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("heap profile: no HeapInuse or no HeapAlloc")
	}
	return inuse, alloc, nil
}

// libraryEntries reads every series of the library's _entries gauges from
// the process's /metrics.
func (p *proc) libraryEntries() (map[string]float64, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return entrySeries(resp.Body)
}

// entrySeries reads, from the Prometheus text format, the samples of the
// metrics named reconcilekit_..._entries, by series (name and labels as
// written).
func entrySeries(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "reconcilekit_") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		name, _, _ := strings.Cut(series, "{")
		if !ok || !strings.HasSuffix(name, "_entries") {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[series] = v
	}
	return out, sc.Err()
}

// perObjectSeries says whether a series of the _entries gauges holds
// entries per object, or per namespace of the objects (freshness's
// namespaces), bounded by the objects that exist, rather than per value
// (the intern table's strings, compare's memo of managedFields contents),
// whose bounds are fixed.
func perObjectSeries(series string) bool {
	for _, fixed := range []string{"reconcilekit_diet_intern_entries", "reconcilekit_compare_memo_entries"} {
		if strings.Contains(series, fixed) {
			return false
		}
	}
	return true
}

// describeWave is one wave of each side, for the log.
func describeWave(waves []soakWave) string {
	var parts []string
	for i, w := range waves {
		parts = append(parts, fmt.Sprintf("%s heap %s (live %s), %v goroutines, RSS %s, %d Event writes, %s",
			soakKinds[i], bench.MiB(w.heap), bench.MiB(w.live), w.goroutines, bench.MiB(w.rss), w.eventWrites, w.took.Round(time.Second)))
	}
	return strings.Join(parts, "; ")
}

// runOutageWave runs one more wave on both sides whose Ats fall due while
// both API servers are down for pn.outage (see soak), sampling the
// controllers every 30 s meanwhile.
func runOutageWave(tb testing.TB, sides []*soakSide, pn soakPlan, res *soakResult) []outageSample {
	tb.Helper()
	w := len(res.waves[soakKinds[0]]) + 1
	var (
		mu        sync.Mutex
		samples   []outageSample
		before    = map[kind]soakSample{}
		stopped   time.Time
		restarted time.Time
	)
	// Every side's Ats created, then both servers stop together.
	created := make(chan struct{}, len(sides))
	resume := make(chan struct{})
	go func() {
		for range sides {
			<-created
		}
		for _, s := range sides {
			sm, err := s.trySample()
			if err != nil {
				tb.Error(err)
			}
			before[s.kind] = sm
		}
		stopped = time.Now()
		for _, s := range sides {
			if err := s.api.Stop(); err != nil {
				tb.Error(err)
			}
		}
		tb.Logf("soak: both API servers stopped for %s", pn.outage)
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for time.Since(stopped) < pn.outage {
			select {
			case <-tick.C:
			case <-time.After(time.Until(stopped.Add(pn.outage))):
			}
			sm := outageSample{at: time.Since(stopped), samples: map[kind]soakSample{}}
			for _, s := range sides {
				v, err := s.trySample()
				if err != nil {
					tb.Error(err)
				}
				sm.samples[s.kind] = v
			}
			mu.Lock()
			samples = append(samples, sm)
			mu.Unlock()
		}
		for _, s := range sides {
			if err := s.api.Start(2*time.Minute, io.Discard); err != nil {
				tb.Error(err)
			}
		}
		restarted = time.Now()
		tb.Logf("soak: both API servers started again after %s", restarted.Sub(stopped).Round(time.Second))
		close(resume)
	}()
	waves := eachSide(tb, sides, func(s *soakSide) soakWave {
		return s.wave(tb, w, pn, func() {
			created <- struct{}{}
			<-resume
		})
	})
	for i, s := range sides {
		res.outageWave[s.kind] = waves[i]
		o := soakOutcome{before: before[s.kind], done: waves[i].done}
		if o.done == pn.n {
			o.after = waves[i].lastDone.Sub(restarted)
		}
		res.outageOutcomes[s.kind] = o
	}
	mu.Lock()
	defer mu.Unlock()
	return samples
}

// soakSection renders the soak's part of the report.
func soakSection(res soakResult) string {
	var b strings.Builder
	pn := res.plan
	lib, hw := res.waves[libraryAt], res.waves[handwrittenAt]
	if len(lib) == 0 || len(hw) == 0 {
		return "The soak ran no wave.\n"
	}
	fmt.Fprintf(&b, "The At as it ships and its hand-written twin, each a process of its own on a control plane of its own, without leader\n"+
		"election (one replica: nothing makes it exit while the API server is gone), ran the same %d waves side by side\n"+
		"(%s in all): each wave creates %d Ats due at one instant in a namespace of its own (no At name is used twice), runs\n"+
		"them to DONE, deletes them and their Pods (as the garbage collector envtest lacks would), and waits until the\n"+
		"controller has sent nothing for %s. Then the process is measured: the Go heap right after two forced garbage\n"+
		"collections (pprof's heap profile with gc=1, twice: a sync.Pool keeps its objects through one), both the heap in use\n"+
		"(runtime.MemStats.HeapInuse: the spans that hold objects, their free room included) and the live heap (HeapAlloc:\n"+
		"the bytes of the objects themselves), its goroutines (go_goroutines), its\n"+
		"resident memory (VmRSS), and the size of every map of the library (the `reconcilekit_*_entries` gauges,\n"+
		"[docs/metrics.md](docs/metrics.md)). One At, in a namespace whose ResourceQuota allows no Pod (the soak writes the\n"+
		"quota's status, which the quota controller envtest lacks would: kube-apiserver's admission then refuses every Pod\n"+
		"there with 403), fails at every reconcile from the first wave to the last (%s in all, the outage wave included):\n"+
		"the objects that exist at the end of a wave are that At and nothing else.\n\n",
		len(lib), res.took.Round(time.Second), pn.n, quietPeriod, res.all.Round(time.Second))

	first, last := lib[0], lib[len(lib)-1]
	hFirst, hLast := hw[0], hw[len(hw)-1]
	largest, largestSeries := 0.0, ""
	for _, w := range lib {
		for series, v := range w.entries {
			if perObjectSeries(series) && v > largest {
				largest, largestSeries = v, series
			}
		}
	}
	if largestSeries == "" {
		largestSeries = "–"
	}
	b.WriteString("| goal (issue 50) | reconcilekit | hand-written | limit | |\n|---|---:|---:|---:|---|\n")
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for _, g := range []struct {
		what     string
		lib, hw  float64
		limit    float64
		fmtValue func(float64) string
	}{
		{"live heap after a forced collection (HeapAlloc), last wave ÷ first", ratio(last.live, first.live), ratio(hLast.live, hFirst.live), 1.05, ratioFormat},
		{"heap in use after a forced collection (HeapInuse), last wave ÷ first", ratio(last.heap, first.heap), ratio(hLast.heap, hFirst.heap), 1.05, ratioFormat},
		{"goroutines, last wave ÷ first", ratio(last.goroutines, first.goroutines), ratio(hLast.goroutines, hFirst.goroutines), 1.05, ratioFormat},
	} {
		fmt.Fprintf(&b, "| %s | %s | %s | ≤ %s× | %s |\n", g.what, g.fmtValue(g.lib), g.fmtValue(g.hw), bench.Number(g.limit), verdict(g.lib <= g.limit))
	}
	fmt.Fprintf(&b, "| largest per-object map of the library at a wave's end (%s), ÷ the Ats that exist then (1) | %s | – | ≤ 1× | %s |\n",
		strings.ReplaceAll(largestSeries, "|", `\|`), bench.Number(largest), verdict(largest <= 1))
	// A series: its create, the patch that makes it one, a write of its
	// count every 30 minutes and at its end (docs/memory.md, "Events").
	eventBound := 3 + int(res.all/(30*time.Minute))
	if res.failingAttempts[libraryAt] == 0 {
		// The quota refused nothing (refuseEveryPod checks it does at
		// the start): no failure to count.
		fmt.Fprintf(&b, "| Event writes about the failing At over the soak | not measured: its Pod was never refused | | ≤ %d | – |\n", eventBound)
	} else {
		fmt.Fprintf(&b, "| Event writes about the failing At over the soak (its Pod refused %d and %d times) | %d | %d | ≤ %d | %s |\n",
			res.failingAttempts[libraryAt], res.failingAttempts[handwrittenAt], res.failingEvents[libraryAt], res.failingEvents[handwrittenAt],
			eventBound, verdict(res.failingEvents[libraryAt] <= eventBound))
	}
	fmt.Fprintf(&b, "\nThe maps whose bound is not the objects (the intern table's strings, at most 4,096 per transform, and compare's memo\n"+
		"of managedFields, at most 512, [docs/memory.md](docs/memory.md), \"Bounds\") are in the second table, with the others.\n"+
		"The heap of the first wave already holds what a process keeps once it has worked (type caches, the scheme, metrics):\n"+
		"the goal is that nothing grows after it.\n\n")

	b.WriteString("| wave | reconcilekit live heap | hand-written live heap | reconcilekit heap | hand-written heap | heap ÷ | reconcilekit goroutines | hand-written goroutines | goroutines ÷ | reconcilekit RSS | hand-written RSS | RSS ÷ | reconcilekit Event writes | hand-written Event writes |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(label string, l, h soakWave) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", label,
			bench.MiB(l.live), bench.MiB(h.live), bench.MiB(l.heap), bench.MiB(h.heap), bench.FormatRatio(l.heap, h.heap),
			bench.Number(l.goroutines), bench.Number(h.goroutines), bench.FormatRatio(l.goroutines, h.goroutines),
			bench.MiB(l.rss), bench.MiB(h.rss), bench.FormatRatio(l.rss, h.rss), l.eventWrites, h.eventWrites)
	}
	for i := range min(len(lib), len(hw)) {
		row(strconv.Itoa(lib[i].wave), lib[i], hw[i])
	}
	if ow, ok := res.outageWave[libraryAt]; ok {
		row(fmt.Sprintf("%d (outage)", ow.wave), ow, res.outageWave[handwrittenAt])
	}

	series := map[string]bool{}
	for _, w := range lib {
		for s := range w.entries {
			series[s] = true
		}
	}
	names := slices.Sorted(maps.Keys(series))
	b.WriteString("\nThe library's maps at the end of each wave (reconcilekit; the hand-written At has none):\n\n| wave |")
	for _, n := range names {
		fmt.Fprintf(&b, " `%s` |", strings.TrimPrefix(n, "reconcilekit_"))
	}
	b.WriteString("\n|---:|" + strings.Repeat("---:|", len(names)) + "\n")
	mapRow := func(label string, w soakWave) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", bench.Number(w.entries[n]))
		}
		b.WriteString("\n")
	}
	for _, w := range lib {
		mapRow(strconv.Itoa(w.wave), w)
	}
	if ow, ok := res.outageWave[libraryAt]; ok {
		mapRow(fmt.Sprintf("%d (outage)", ow.wave), ow)
	}

	if len(res.outageOutcomes) > 0 {
		fmt.Fprintf(&b, "\n**The outage.** One more wave: %d Ats per controller, due 30 s after their creation; once created, both\n"+
			"kube-apiservers stopped for %s (SIGTERM, as internal/restart stops them), then started again with the same\n"+
			"command line, certificates and etcd. Every 30 s meanwhile each controller was measured as above. Afterwards\n"+
			"every At had to end DONE with exactly one Pod (none lost, none doubled; the test fails otherwise, for the\n"+
			"hand-written At only on a doubled Pod: whether it converges is the finding below); the wave's row above is its end.\n\n", pn.n, pn.outage)
		converged := func(k kind) string {
			o := res.outageOutcomes[k]
			if o.done < pn.n {
				return fmt.Sprintf("%d of %d DONE, the rest RUNNING for good", o.done, pn.n)
			}
			return fmt.Sprintf("all %d DONE, the last %s after the API servers were back", pn.n, o.after.Round(time.Second))
		}
		lost := func(k kind) string {
			w := res.outageWave[k]
			out := fmt.Sprintf("%d not DONE, %d with no Pod (lost), %d with more than one (doubled)", pn.n-w.done, w.podless, w.doubled)
			if w.stuck > 0 {
				out += fmt.Sprintf(", %d still there %s after their deletion (their finalizers then removed by the soak)",
					w.stuck, (5*time.Minute + time.Duration(pn.n)*100*time.Millisecond).Round(time.Second))
			}
			return out
		}
		fmt.Fprintf(&b, "Of the wave's Ats: reconcilekit %s; hand-written %s.\n", lost(libraryAt), lost(handwrittenAt))
		fmt.Fprintf(&b, "After the outage: reconcilekit %s;\nhand-written %s.", converged(libraryAt), converged(handwrittenAt))
		if res.outageOutcomes[handwrittenAt].done < pn.n {
			// Not every run: it depends on whether the Pods finished
			// before the hand-written At's watch was back.
			b.WriteString(" A Pod created while the controller's\n" +
				"watch was down reaches its cache only when the informer lists again (the watch's resourceVersion expired\n" +
				"with the restart; client-go's backoff, grown during the outage, puts that list up to a minute after the\n" +
				"restart), as a create event of a Pod already finished: the library's At wakes its At on it, the hand-written\n" +
				"At's predicate drops Pod creates and waits for an update that never comes.")
		}
		b.WriteString("\n\n")
		b.WriteString("| since the API servers stopped | reconcilekit live heap | reconcilekit heap | reconcilekit goroutines | hand-written live heap | hand-written heap | hand-written goroutines |\n|---|---:|---:|---:|---:|---:|---:|\n")
		lb, hb := res.outageOutcomes[libraryAt].before, res.outageOutcomes[handwrittenAt].before
		outageRow := func(label string, l, h soakSample) {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", label, bench.MiB(l.live), bench.MiB(l.heap), bench.Number(l.goroutines),
				bench.MiB(h.live), bench.MiB(h.heap), bench.Number(h.goroutines))
		}
		outageRow("before", lb, hb)
		maxLive, maxHeap, maxG := map[kind]float64{}, map[kind]float64{}, map[kind]float64{}
		for _, s := range res.outage {
			outageRow(s.at.Round(time.Second).String(), s.samples[libraryAt], s.samples[handwrittenAt])
			for k, v := range s.samples {
				maxLive[k], maxHeap[k], maxG[k] = max(maxLive[k], v.live), max(maxHeap[k], v.heap), max(maxG[k], v.goroutines)
			}
		}
		fmt.Fprintf(&b, "\nDuring the outage, the largest ÷ before: live heap reconcilekit %s, hand-written %s; heap in use reconcilekit %s,\n"+
			"hand-written %s; goroutines reconcilekit %s, hand-written %s.\n",
			bench.FormatRatio(maxLive[libraryAt], lb.live), bench.FormatRatio(maxLive[handwrittenAt], hb.live),
			bench.FormatRatio(maxHeap[libraryAt], lb.heap), bench.FormatRatio(maxHeap[handwrittenAt], hb.heap),
			bench.FormatRatio(maxG[libraryAt], lb.goroutines), bench.FormatRatio(maxG[handwrittenAt], hb.goroutines))
	}
	return b.String()
}

// TestSoakShort runs the soak at a short setting (2 waves of 20 Ats; the
// outage wave only with -at.soak.outage), so that the harness cannot rot,
// and checks what needs no figure of the machine: every wave measured on
// both sides, every library map back to at most the failing At once its
// wave is gone, and the report renders. It is not part of make test (it
// takes minutes of two control planes): run it with -at.soak.short.
func TestSoakShort(t *testing.T) {
	if !*soakShort {
		t.Skip("the soak's smoke runs with -at.soak.short")
	}
	t.Parallel()
	lockPlane(t)
	res := soak(t, buildBinaries(t, true), soakPlan{n: 20, pace: 10 * time.Millisecond, waves: 2, outage: *soakOutage})
	for _, k := range soakKinds {
		if len(res.waves[k]) != 2 {
			t.Errorf("%s: %d waves measured, want 2", k, len(res.waves[k]))
		}
	}
	for _, w := range res.waves[libraryAt] {
		for series, v := range w.entries {
			if perObjectSeries(series) && v > 1 {
				t.Errorf("wave %d: %s = %v with one At left, want at most 1", w.wave, series, v)
			}
		}
		if len(w.entries) == 0 {
			t.Errorf("wave %d: no _entries gauge read from the At", w.wave)
		}
	}
	if res.failingAttempts[libraryAt] == 0 {
		t.Errorf("the failing At's Pod was never refused: its Event writes are not measured")
	}
	section := soakSection(res)
	t.Logf("\n%s", section)
	wants := []string{"last wave ÷ first", "freshness_entries"}
	if *soakOutage > 0 {
		wants = append(wants, "(outage)")
	}
	for _, want := range wants {
		if !strings.Contains(section, want) {
			t.Errorf("the soak's section lacks %q", want)
		}
	}
}

var soakShort = flag.Bool("at.soak.short", false, "run TestSoakShort: the soak at a short setting")

// TestSpliceSectionReplacesOnlyItsSection: make soak rewrites the soak's
// section of a report and nothing else, whether the section is in the
// middle, at the end, or not there yet.
func TestSpliceSectionReplacesOnlyItsSection(t *testing.T) {
	const h = "## Soak"
	for _, tc := range []struct {
		name, report, want string
	}{
		{"in the middle", "# R\n\n## A\n\na\n\n## Soak\n\nold\n\n| t |\n\n## The packages\n\np\n",
			"# R\n\n## A\n\na\n\n## Soak\n\nnew\n\n## The packages\n\np\n"},
		{"at the end", "# R\n\n## A\n\na\n\n## Soak\n\nold\n",
			"# R\n\n## A\n\na\n\n## Soak\n\nnew\n"},
		{"absent: before the packages", "# R\n\n## A\n\na\n\n## The packages\n\np\n",
			"# R\n\n## A\n\na\n\n## Soak\n\nnew\n\n## The packages\n\np\n"},
		{"absent, no packages: at the end", "# R\n\n## A\n\na\n",
			"# R\n\n## A\n\na\n\n## Soak\n\nnew\n"},
		{"a longer heading is another section", "# R\n\n## Soak more\n\nx\n",
			"# R\n\n## Soak more\n\nx\n\n## Soak\n\nnew\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spliceSection(tc.report, h, "new\n", "## The packages"); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
