package bench_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// podRunTime is how long the harness's kubelet lets each Pod run before it
// completes it. A command that exits the instant its Pod is created is not
// realistic, and the library's At controller loses such a Pod's completion
// when its cache lags (see TestAStaleCachedAtDoesNotLoseItsPodsCompletion).
const podRunTime = time.Second

// quietPeriod is how long a controller must send no write and no uncached
// read for a phase of a run to be over: events are sent asynchronously,
// after the status write that the harness sees.
const quietPeriod = 2 * time.Second

// scenario is one measured run of one controller.
type scenario struct {
	// n Ats are created, scheduled at one instant (spread 0) or evenly
	// over spread.
	n      int
	spread time.Duration
	// workers is the --workers of both controllers.
	workers int
	// unrelated Pods, which no At owns, exist in another namespace from
	// before the controller starts until the run ends.
	unrelated int
	// pace is the interval between two At creations: the harness creates
	// them at that steady rate, the same for both controllers.
	pace time.Duration
	// ahead is how long after the last At's creation is due the (first)
	// schedule falls.
	ahead time.Duration
	// profile, when set, is where to write a CPU profile of the process,
	// taken from the start of creation for profileFor; a heap profile taken
	// once every At is DONE goes beside it (.heap.pprof).
	profile    string
	profileFor time.Duration
}

func (s scenario) String() string {
	var b strings.Builder
	if s.spread > 0 {
		fmt.Fprintf(&b, "%d Ats over %s", s.n, s.spread)
	} else {
		fmt.Fprintf(&b, "%d Ats at one instant", s.n)
	}
	fmt.Fprintf(&b, ", %d worker", s.workers)
	if s.workers != 1 {
		b.WriteString("s")
	}
	if s.unrelated > 0 {
		fmt.Fprintf(&b, ", %d unrelated Pods", s.unrelated)
	}
	return b.String()
}

// run is what one run of one controller process measured.
type run struct {
	kind kind
	sc   scenario
	// created is how long creating the Ats took, and ahead how long before
	// the first schedule the last one was created (negative: late).
	created, ahead time.Duration
	// Every request of the controller's user, by phase: startup (process
	// start until it leads and watches), lifecycle (first At created until
	// every At is DONE and the controller is quiet), resync (a second
	// process started on the DONE Ats until it has reconciled each once
	// and is quiet), deletion (every At deleted until they are gone and
	// the controller is quiet).
	startup, lifecycle, resync, deletion []bench.AuditRequest
	// reconciles counted by controller-runtime in the process, per phase.
	reconcilesLifecycle, reconcilesResync, reconcilesDeletion float64
	// allDone is the last schedule to the last At seen DONE.
	allDone time.Duration
	// podLag is, per At, the receipt of its first accepted Pod create
	// (the audit log's requestReceivedTimestamp) minus spec.schedule.
	podLag bench.Distribution
	// podCreates counts accepted Pod creates per At; podsPerAt is the
	// most distinct Pods the kubelet saw for one At.
	podCreates map[string]int
	podsPerAt  int
	// hwm is the process's VmHWM at the end of the lifecycle (its peak
	// resident memory), sampledRSS the largest VmRSS sampled every 100 ms;
	// resyncHWM is the second process's VmHWM after the deletion.
	hwm, sampledRSS, resyncHWM uint64
	// anon is the largest RssAnon sampled every 100 ms (the process's own
	// memory, without the binary's file pages); heapInuse the Go heap in
	// use (go_memstats_heap_inuse_bytes) at the end of created → DONE.
	anon, heapInuse uint64
	// cpu is the process's CPU time (process_cpu_seconds_total) from its
	// start until every At is DONE; reconcileTime is the mean duration of
	// a reconcile over that phase (controller_runtime_reconcile_time_seconds).
	cpu, reconcileTime float64
	// staleReads counts the reads that found the cache older than the
	// process's own last write and waited for it
	// (reconcilekit_stale_reads_total; on controller-runtime's guard, the
	// reads its consistency histogram saw held for more than 5 ms; the
	// classic and hand-written controllers have no guard).
	staleReads float64
	// spans is how many spans the traced At exported from its start until
	// every At was DONE (0 for the others).
	spans float64
	// profile is the CPU profile's path, if one was taken.
	profile string
	// planeLifecycle is the CPU time kube-apiserver and etcd used from the
	// first At created until the end of created → DONE (every At DONE and
	// the controller quiet), planeAfterSchedule from the (last) schedule
	// until then. The harness's load is the same for both controllers but
	// for its watches, which carry each controller's writes, and for the
	// windows' lengths: both count against the slower controller.
	planeLifecycle, planeAfterSchedule planeCPU
}

// planeCPU is the CPU time used by the control plane's processes.
type planeCPU struct{ apiserver, etcd time.Duration }

func (p planeCPU) sub(q planeCPU) planeCPU {
	return planeCPU{apiserver: p.apiserver - q.apiserver, etcd: p.etcd - q.etcd}
}

// cpu returns the CPU time the plane's kube-apiserver and etcd have used
// so far.
func (pl *plane) cpu() (planeCPU, error) {
	api, err := procCPU(pl.apiserverPID)
	if err != nil {
		return planeCPU{}, err
	}
	etcd, err := procCPU(pl.etcdPID)
	if err != nil {
		return planeCPU{}, err
	}
	return planeCPU{apiserver: api, etcd: etcd}, nil
}

// cpuNow is cpu for the test's goroutine.
func (pl *plane) cpuNow(tb testing.TB) planeCPU {
	tb.Helper()
	c, err := pl.cpu()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// procCPU is the CPU time (user and system) process pid has used, from
// /proc/<pid>/stat, whose ticks are USER_HZ: 100 per second on every Linux
// architecture Go supports.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	st, err := bench.ParseProcStat(string(b))
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	return time.Duration(st.CPUTicks) * 10 * time.Millisecond, nil
}

// userSeq numbers the controller users, one per run.
var userSeq atomic.Int64

// measure runs one controller process through the scenario in a fresh
// namespace of pl: start it (its own user, leader election on), create the
// Ats, wait until every one is DONE and the controller is quiet; stop it and
// start it again (a resync: it reconciles each DONE At once more); delete
// the Ats and wait until they are gone; stop it; then delete the Pods, as
// the garbage collector envtest lacks would.
func measure(tb testing.TB, pl *plane, bins binaries, k kind, sc scenario) *run {
	tb.Helper()
	ctx := context.Background()
	r := &run{kind: k, sc: sc}
	ns := pl.namespace(tb, "run")
	user := fmt.Sprintf("%s-%d", k, userSeq.Add(1))
	kubeconfig := pl.user(tb, user)
	kl := startKubeletOn(tb, pl.admin, ns, podRunTime)
	tr := startTrackerOn(tb, pl.admin, ns)
	defer kl.stop()
	defer tr.stop()
	tail := pl.tail(tb, user)
	timeout := 3*time.Minute + sc.spread + time.Duration(sc.n)*100*time.Millisecond

	started := time.Now()
	opts := procOptions{kubeconfig: kubeconfig, workers: sc.workers, pprof: sc.profile != ""}
	p := startProc(tb, bins, k, user, opts)
	p.waitLeader(tb, tail, 2*time.Minute)
	tail.waitQuiet(tb, started, time.Second, time.Minute)

	// Every run starts creating at the same point of a second: which Ats
	// get a PENDING status write depends on it (see creationPhase).
	createStart := alignedStart(time.Now())
	time.Sleep(time.Until(createStart))
	first := createStart.Add(time.Duration(sc.n)*sc.pace + sc.ahead)
	ats := make([]*atv1.At, sc.n)
	schedules := map[string]time.Time{}
	last := first
	for i := range ats {
		when := first
		if sc.n > 1 {
			when = first.Add(sc.spread * time.Duration(i) / time.Duration(sc.n-1))
		}
		when = when.Truncate(time.Millisecond)
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), when)
		schedules[ats[i].Name] = when
		last = when
	}
	waitProfile := func() {}
	if sc.profile != "" {
		r.profile = sc.profile
		waitProfile = p.cpuProfile(tb, sc.profileFor, sc.profile)
	}
	planeAtCreate := pl.cpuNow(tb)
	// The control plane's CPU when the (last) schedule falls due, read on
	// time by a timer.
	type sample struct {
		cpu planeCPU
		err error
	}
	planeAtSchedule := make(chan sample, 1)
	schedTimer := time.AfterFunc(time.Until(last), func() {
		c, err := pl.cpu()
		planeAtSchedule <- sample{c, err}
	})
	defer schedTimer.Stop()
	createPaced(tb, pl.admin, ats, sc.pace)
	r.created = time.Since(createStart)
	r.ahead = first.Sub(createStart.Add(r.created))
	if r.ahead < 0 {
		tb.Logf("%s, %s: the last At was created %s after the first schedule", k, sc, -r.ahead)
	}
	lastDone := tr.waitDone(tb, sc.n, timeout)
	r.allDone = lastDone.Sub(last)
	tail.waitQuiet(tb, lastDone, quietPeriod, time.Minute)
	lifecycleEnd := time.Now()
	planeAtEnd := pl.cpuNow(tb)
	r.planeLifecycle = planeAtEnd.sub(planeAtCreate)
	if schedTimer.Stop() {
		tb.Fatalf("%s, %s: every At DONE before the schedule's timer fired", k, sc)
	}
	at := <-planeAtSchedule // the timer fired: its sample is sent or on its way
	if at.err != nil {
		tb.Fatal(at.err)
	}
	r.planeAfterSchedule = planeAtEnd.sub(at.cpu)
	r.reconcilesLifecycle = p.reconciles(tb)
	r.cpu = p.metric(tb, "process_cpu_seconds_total", nil)
	if r.reconcilesLifecycle > 0 {
		r.reconcileTime = p.metric(tb, "controller_runtime_reconcile_time_seconds_sum", map[string]string{"controller": k.controllerName()}) / r.reconcilesLifecycle
	}
	if k == libraryTracedAt {
		r.spans = p.metric(tb, tracingSpansMetric, nil)
	}
	if v, _, err := p.scrape("reconcilekit_stale_reads_total", nil); err == nil {
		r.staleReads = v
	}
	if k == upstreamGuardAt {
		// controller-runtime times every guarded read: those held past the
		// histogram's first bucket (5 ms) waited for the cache.
		all, _, err1 := p.scrape("controller_runtime_client_consistency_wait_duration_seconds_count", nil)
		quick, _, err2 := p.scrape("controller_runtime_client_consistency_wait_duration_seconds_bucket", map[string]string{"le": "0.005"})
		if err1 == nil && err2 == nil {
			r.staleReads = all - quick
		}
	}
	r.hwm, r.sampledRSS = p.peak(tb)
	r.anon = p.peakAnon.Load()
	if v, _, err := p.scrape("go_memstats_heap_inuse_bytes", nil); err == nil {
		r.heapInuse = uint64(v)
	}
	waitProfile()
	if sc.profile != "" {
		p.heapProfile(tb, strings.TrimSuffix(sc.profile, ".cpu.pprof")+".heap.pprof")
	}
	p.stop(tb)

	resyncStart := time.Now()
	p2 := startProc(tb, bins, k, user+"-resync", procOptions{kubeconfig: kubeconfig, workers: sc.workers})
	p2.waitReconciles(tb, float64(sc.n), timeout)
	tail.waitQuiet(tb, resyncStart, quietPeriod, time.Minute)
	resyncEnd := time.Now()
	r.reconcilesResync = p2.reconciles(tb)

	deleteStart := time.Now()
	// One request per At, 8 at a time: a DeleteCollection of 10,000 Ats
	// outlasts the API server's request timeout.
	deleteEach(tb, pl.admin, ats)
	tr.waitGone(tb, timeout)
	tail.waitQuiet(tb, deleteStart, quietPeriod, time.Minute)
	deleteEnd := time.Now()
	r.reconcilesDeletion = p2.reconciles(tb) - r.reconcilesResync
	r.resyncHWM, _ = p2.peak(tb)
	p2.stop(tb)
	kl.stop()
	tr.stop()

	reqs := tail.read(tb)
	r.startup = between(reqs, started, createStart)
	r.lifecycle = between(reqs, createStart, lifecycleEnd)
	r.resync = between(reqs, resyncStart, resyncEnd)
	r.deletion = between(reqs, deleteStart, deleteEnd)

	r.podCreates = map[string]int{}
	var lags []time.Duration
	for _, q := range r.lifecycle {
		if q.Verb != "create" || q.Resource != "pods" || !q.Accepted() {
			continue
		}
		at := kl.atOfPod(q.Name)
		if at == "" {
			tb.Errorf("%s: the Pod %s it created has no At the kubelet knows", k, q.Name)
			continue
		}
		if r.podCreates[at]++; r.podCreates[at] == 1 {
			lags = append(lags, q.Received.Sub(schedules[at]))
		}
	}
	r.podLag = bench.Summarize(lags)
	if len(r.podCreates) != sc.n {
		// Every At got its Pod (the tracker saw each DONE): a Pod create
		// missing from the log means requests were not counted.
		tb.Errorf("%s, %s: the audit log holds an accepted Pod create for %d Ats of %d", k, sc, len(r.podCreates), sc.n)
	}
	for _, n := range kl.podsSeen() {
		r.podsPerAt = max(r.podsPerAt, n)
	}
	deletePods(ctx, tb, pl, ns)
	return r
}

// deleteEach deletes the objects with one request each, 8 at a time; one
// already gone is not an error.
func deleteEach[T client.Object](tb testing.TB, c client.Client, objs []T) {
	tb.Helper()
	err := eachPaced(objs, 0, func(o T) error {
		return client.IgnoreNotFound(c.Delete(context.Background(), o))
	})
	if err != nil {
		tb.Fatalf("deleting: %v", err)
	}
}

// deletePods deletes the Pods of ns, one request each.
func deletePods(ctx context.Context, tb testing.TB, pl *plane, ns string) {
	tb.Helper()
	var pods corev1.PodList
	if err := pl.admin.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		tb.Fatal(err)
	}
	podObjs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podObjs[i] = &pods.Items[i]
	}
	deleteEach(tb, pl.admin, podObjs)
}

// creationPhase is how far past a whole second of the clock every run of
// measure starts creating its Ats. The API server dates an object's
// creation to the whole second (creationTimestamp), and the At writes no
// PENDING status for an At due within controller.FirstStatusWithin of its
// creation (reconcile.Loop.FirstStatusWithin), so the Ats that get that
// write depend on where in a second the creation starts: with 1000 Ats
// created over 10 s and due 3 s after, from 30% to 40% of them, 5.30 to
// 5.40 writes per At for the same controller. At the same phase, two
// controllers' writes per At compare to the hundredth.
const creationPhase = 500 * time.Millisecond

// alignedStart returns the first instant at or after now that is
// creationPhase past a whole second.
func alignedStart(now time.Time) time.Time {
	t := now.Truncate(time.Second).Add(creationPhase)
	if t.Before(now) {
		t = t.Add(time.Second)
	}
	return t
}

// createPaced creates the Ats in order, one every pace (up to 8 requests in
// flight), so that both controllers meet the same stream of creations; with
// pace 0, as fast as the 8 clients go.
func createPaced(tb testing.TB, c client.Client, ats []*atv1.At, pace time.Duration) {
	tb.Helper()
	if err := eachPaced(ats, pace, func(at *atv1.At) error { return c.Create(context.Background(), at) }); err != nil {
		tb.Fatalf("creating Ats: %v", err)
	}
}

// eachPaced calls f with each At in order, one every pace (up to 8 calls
// at once), and returns the first error.
func eachPaced[T any](ats []T, pace time.Duration, f func(T) error) error {
	work := make(chan T, len(ats))
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 8 {
		wg.Go(func() {
			for at := range work {
				if err := f(at); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	start := time.Now()
	for i, at := range ats {
		time.Sleep(time.Until(start.Add(time.Duration(i) * pace)))
		work <- at
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// createUnrelated creates n Pods that no At owns and no controller
// selects (no labels, no owner) in a namespace of their own, and returns
// a function that deletes them.
func createUnrelated(tb testing.TB, pl *plane, n int) func() {
	tb.Helper()
	ns := pl.namespace(tb, "unrelated")
	work := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 8 {
		wg.Go(func() {
			for i := range work {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%05d", i)},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
						Name: "command", Image: atv1.DefaultImage, Command: []string{"/bin/sh", "-c", "sleep 3600"}}}},
				}
				if err := pl.admin.Create(context.Background(), pod); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatalf("creating unrelated Pods: %v", *err)
	}
	return func() {
		if err := pl.admin.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
	}
}

// How long after the last At's creation is due the schedule comes: about
// 3 s for Ats at one instant, as in issue 13; 10 s before the first of a
// spread, so that its precision is the timer's, not the backlog of creation.
const (
	instantAhead = 3 * time.Second
	spreadAhead  = 10 * time.Second
)

// trial is one scenario measured on several controllers, each run once
// per round.
type trial struct {
	sc    scenario
	kinds []kind
	// nRounds is how many rounds the plan asks for; rounds are those run.
	nRounds int
	rounds  []round
}

// round is one run of each controller of a trial, in order.
type round struct {
	order []kind
	runs  map[kind]*run
}

// plan is what a comparison measures.
type plan struct {
	// sizes and workers: every size at one instant with every number of
	// workers.
	sizes, workers []int
	// rounds is how many rounds each size runs (the last repeated for the
	// sizes after it); the unrelated and spread scenarios run one.
	rounds []int
	// spreadN Ats over spread, with the first number of workers.
	spreadN int
	spread  time.Duration
	// unrelated Pods exist during a run of the first size at one instant
	// with the first number of workers.
	unrelated int
	// pace is the interval between two At creations; the last At of a
	// one-instant scenario is due 3 s before the schedule, that of the
	// spread scenario 10 s before its first schedule.
	pace time.Duration
	// writeCostN, when above zero, is how many Ats get each kind of write
	// when measuring what a write costs (see measureWriteCosts), in
	// writeCostRounds rounds, after the scenarios.
	writeCostN int
	// sharded, when above zero, is how many Ats at one instant the sharded
	// scenario creates (see measureShardedTrial), once, after the trials.
	sharded int
	// profiles, when set, is a directory for a CPU profile of each
	// controller in the first round of the first scenario, profileFor long.
	profiles   string
	profileFor time.Duration
	// beside runs each trial, the sharded scenario and the write costs
	// side by side, each on a control plane of its own, when compare is
	// given a *testing.T: for a test that checks counts and never times
	// (the smoke). A benchmark runs them one after the other on one plane,
	// so that no figure shares the machine with another measurement.
	beside bool
	// memory adds the controllers of issue 38's memory comparison (the
	// bare client-go floor, the At without its cache diet) to every
	// one-instant trial, in its first memoryRounds rounds (0: every round).
	memory       bool
	memoryRounds int
	// only, when set, keeps only these controllers in every trial.
	only []kind
	// tracing adds the traced At to the first trial (issue 49).
	tracing bool
}

// likeForLike are the controllers of every trial: the naive floor, the
// hand-written baseline and the library's At.
var likeForLike = []kind{classicAt, handwrittenAt, libraryAt}

// trials lists the plan's trials in the order they run. The first size at
// one instant with the first number of workers also runs the At on
// controller-runtime's guard (issue 22).
func (pn plan) trials() []trial {
	var out []trial
	roundsOf := func(i int) int {
		if len(pn.rounds) == 0 {
			return 1
		}
		return pn.rounds[min(i, len(pn.rounds)-1)]
	}
	for i, n := range pn.sizes {
		for j, w := range pn.workers {
			kinds := likeForLike
			if i == 0 && j == 0 {
				kinds = append(slices.Clone(likeForLike), upstreamGuardAt)
				if pn.tracing {
					kinds = append(kinds, libraryTracedAt)
				}
			}
			if pn.memory {
				kinds = append(slices.Clone(kinds), memoryKinds...)
			}
			if len(pn.only) > 0 {
				kinds = slices.DeleteFunc(slices.Clone(kinds), func(k kind) bool { return !slices.Contains(pn.only, k) })
			}
			out = append(out, trial{sc: scenario{n: n, workers: w, pace: pn.pace, ahead: instantAhead}, kinds: kinds, nRounds: roundsOf(i)})
		}
	}
	if pn.unrelated > 0 {
		n := pn.sizes[0]
		out = append(out, trial{sc: scenario{n: n, workers: pn.workers[0], unrelated: pn.unrelated, pace: pn.pace, ahead: instantAhead},
			kinds: likeForLike, nRounds: 1})
	}
	if pn.spreadN > 0 {
		out = append(out, trial{sc: scenario{n: pn.spreadN, spread: pn.spread, workers: pn.workers[0], pace: pn.pace, ahead: spreadAhead},
			kinds: likeForLike, nRounds: 1})
	}
	return out
}

// comparison is every controller measured on every trial of a plan.
type comparison struct {
	plan   plan
	trials []trial
	// atPprof says how the At binary served pprof ("flag", "overlay" or
	// "" when no profile was taken).
	atPprof string
	// serverVersion is the API server's version.
	serverVersion string
	// writeCosts is what each kind of write cost the plane, when measured.
	writeCosts []writeCost
	// sharded is the sharded scenario, when measured.
	sharded *shardedTrial
	// soak is issue 50's soak, when run.
	soak *soakResult
}

// writeCostRounds is how many times each kind of write is measured.
const writeCostRounds = 2

// compare builds the controllers, starts an audited control plane (one per
// trial and scenario with plan.beside) and measures every controller of
// every trial, round after round. The order rotates from one round (and
// one trial) to the next, so that no controller always meets the warmer,
// or fuller, API server.
func compare(tb testing.TB, pn plan) comparison {
	tb.Helper()
	if pn.profiles != "" {
		if err := os.MkdirAll(pn.profiles, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	bins := buildBinaries(tb, pn.profiles != "")
	cmp := comparison{plan: pn, atPprof: bins.atPprof}
	trials := pn.trials()
	if t, ok := tb.(*testing.T); ok && pn.beside {
		// Each part writes its own field (or element) of cmp; t.Run
		// returns once every part has ended.
		cmp.trials = make([]trial, len(trials))
		t.Run("beside", func(t *testing.T) {
			for i, tr := range trials {
				t.Run(tr.sc.String(), func(t *testing.T) {
					t.Parallel()
					pl := startPlane(t)
					if i == 0 {
						cmp.serverVersion = discoverVersion(t, pl)
					}
					cmp.trials[i] = runTrial(t, pl, bins, pn, i, tr)
				})
			}
			if pn.sharded > 0 {
				t.Run("sharded", func(t *testing.T) {
					t.Parallel()
					st := measureShardedTrial(t, startPlane(t), bins, pn.sharded, pn.pace)
					cmp.sharded = &st
				})
			}
			if pn.writeCostN > 0 {
				t.Run("write costs", func(t *testing.T) {
					t.Parallel()
					cmp.writeCosts = measureWriteCosts(t, startPlane(t), pn.writeCostN, writeCostRounds)
				})
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		return cmp
	}
	pl := startPlane(tb)
	cmp.serverVersion = discoverVersion(tb, pl)
	for i, t := range trials {
		cmp.trials = append(cmp.trials, runTrial(tb, pl, bins, pn, i, t))
	}
	if pn.sharded > 0 {
		tb.Logf("sharded: %d Ats at one instant, one replica, then %d replicas over %d ranges", pn.sharded, shardedReplicas, shardRanges)
		st := measureShardedTrial(tb, pl, bins, pn.sharded, pn.pace)
		cmp.sharded = &st
	}
	if pn.writeCostN > 0 {
		tb.Logf("what a write costs: %d Ats per kind, %d rounds", pn.writeCostN, writeCostRounds)
		cmp.writeCosts = measureWriteCosts(tb, pl, pn.writeCostN, writeCostRounds)
	}
	return cmp
}

// runTrial runs every round of trial t, the i-th of plan pn, on pl: each
// round measures its controllers one after the other, in an order shifted
// by one per trial and round, so that no controller always goes first.
func runTrial(tb testing.TB, pl *plane, bins binaries, pn plan, i int, t trial) trial {
	tb.Helper()
	if t.sc.unrelated > 0 {
		defer createUnrelated(tb, pl, t.sc.unrelated)()
	}
	for r := range t.nRounds {
		kinds := t.kinds
		if pn.memoryRounds > 0 && r >= pn.memoryRounds {
			kinds = slices.DeleteFunc(slices.Clone(kinds), func(k kind) bool { return slices.Contains(memoryKinds, k) })
		}
		shift := (i + r) % len(kinds)
		rd := round{order: append(slices.Clone(kinds[shift:]), kinds[:shift]...), runs: map[kind]*run{}}
		for _, k := range rd.order {
			s := t.sc
			if i == 0 && r == 0 && pn.profiles != "" {
				s.profile = filepath.Join(pn.profiles, fmt.Sprintf("%s.cpu.pprof", k))
				s.profileFor = pn.profileFor
			}
			tb.Logf("%s, round %d of %d: %s", k, r+1, t.nRounds, s)
			rd.runs[k] = measure(tb, pl, bins, k, s)
		}
		t.rounds = append(t.rounds, rd)
	}
	return t
}

// has reports whether the trial measured controller k.
func (t trial) has(k kind) bool { return slices.Contains(t.kinds, k) }

// values is f of k's run in each round.
func (t trial) values(k kind, f func(*run) float64) []float64 {
	var out []float64
	for _, rd := range t.rounds {
		if r := rd.runs[k]; r != nil {
			out = append(out, f(r))
		}
	}
	return out
}

// ratios is f of of's run over f of over's run, in each round where both
// ran and the divisor is not zero.
func (t trial) ratios(of, over kind, f func(*run) float64) []float64 {
	var out []float64
	for _, rd := range t.rounds {
		a, b := rd.runs[of], rd.runs[over]
		if a == nil || b == nil || f(b) == 0 {
			continue
		}
		out = append(out, f(a)/f(b))
	}
	return out
}

// Figures of one run.

// classOf is the request's class, with one addition to
// bench.AuditRequest.Class: the Event leader election records when a
// process becomes leader (a core Event in the Lease's namespace) belongs to
// leader election.
func classOf(r bench.AuditRequest) bench.RequestClass {
	if r.Resource == "events" && r.Group == "" && r.Namespace == leaseNamespace {
		return bench.ClassLeaderElection
	}
	return r.Class()
}

// accepted counts the accepted writes of reqs by target ("patch
// ats/status").
func accepted(reqs []bench.AuditRequest) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		if classOf(r) == bench.ClassWrite && r.Accepted() {
			m[r.Target()]++
		}
	}
	return m
}

func count(reqs []bench.AuditRequest, ok func(bench.AuditRequest) bool) int {
	n := 0
	for _, r := range reqs {
		if ok(r) {
			n++
		}
	}
	return n
}

func isWrite(r bench.AuditRequest) bool { return classOf(r) == bench.ClassWrite }
func isRefusedWrite(r bench.AuditRequest) bool {
	return classOf(r) == bench.ClassWrite && r.Refused()
}

// isOtherFailure is a request the server answered with an error other than
// a refused write: a read of a missing object (404), a throttled or failed
// request.
func isOtherFailure(r bench.AuditRequest) bool {
	return !r.Accepted() && !isRefusedWrite(r) && r.Code != 0
}
func isUncachedRead(r bench.AuditRequest) bool { return classOf(r) == bench.ClassRead }

// beyondWatches is a request other than what a running controller sends
// anyway (its informers' lists and watches, its Lease, discovery).
func beyondWatches(r bench.AuditRequest) bool {
	c := classOf(r)
	return c == bench.ClassWrite || c == bench.ClassRead
}

func isEventWrite(r bench.AuditRequest) bool {
	return classOf(r) == bench.ClassWrite && r.Resource == "events"
}

// total sums a map's values.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func targetsOf(ms ...map[string]int) []string {
	seen := map[string]bool{}
	for _, m := range ms {
		for k := range maps.Keys(m) {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// serverTime is the distribution of the time the API server took to
// answer the accepted writes of reqs.
func serverTime(reqs []bench.AuditRequest) bench.Distribution {
	var d []time.Duration
	for _, r := range reqs {
		if classOf(r) == bench.ClassWrite && r.Accepted() && !r.Staged.IsZero() {
			d = append(d, r.Staged.Sub(r.Received))
		}
	}
	return bench.Summarize(d)
}

func tenthMillis(seconds float64) string {
	return strconv.FormatFloat(seconds*1000, 'f', 1, 64) + " ms"
}

func seconds(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + " s" }

// figure is one row of a run's table: what it measures and how.
type figure struct {
	metric string
	of     func(*run) float64
	format func(float64) string
}

// perAt divides a count by the run's number of Ats.
func perAt(f func(*run) int) func(*run) float64 {
	return func(r *run) float64 { return float64(f(r)) / float64(r.sc.n) }
}

// runFigures are the rows of a round's table, for runs that wrote to
// lifecycleTargets and deletionTargets.
func runFigures(sc scenario, lifecycleTargets, deletionTargets []string) []figure {
	sec := func(f func(*run) time.Duration) func(*run) float64 {
		return func(r *run) float64 { return f(r).Seconds() }
	}
	perAtSec := func(f func(*run) time.Duration) func(*run) float64 {
		return func(r *run) float64 { return f(r).Seconds() / float64(r.sc.n) }
	}
	fs := []figure{{"created → DONE: accepted writes per At (events included)", perAt(func(r *run) int { return total(accepted(r.lifecycle)) }), nil}}
	for _, k := range lifecycleTargets {
		fs = append(fs, figure{"  `" + k + "` per At", perAt(func(r *run) int { return accepted(r.lifecycle)[k] }), nil})
	}
	what := "schedule → all DONE"
	if sc.spread > 0 {
		what = "last schedule → all DONE"
	}
	fs = append(fs,
		figure{"created → DONE: refused writes (409) per At", perAt(func(r *run) int { return count(r.lifecycle, isRefusedWrite) }), nil},
		figure{"created → DONE: other failed requests per At", perAt(func(r *run) int { return count(r.lifecycle, isOtherFailure) }), nil},
		figure{"created → DONE: uncached reads (GET/LIST outside the informers) per At", perAt(func(r *run) int { return count(r.lifecycle, isUncachedRead) }), nil},
		figure{"created → DONE: all requests per At (watches, Lease, discovery included)", perAt(func(r *run) int { return len(r.lifecycle) }), nil},
		figure{"created → DONE: reconciles per At", func(r *run) float64 { return r.reconcilesLifecycle / float64(r.sc.n) }, nil},
		figure{what, sec(func(r *run) time.Duration { return r.allDone }), bench.Millis},
		figure{"Pod create received − schedule, p50", sec(func(r *run) time.Duration { return r.podLag.P50 }), bench.Millis},
		figure{"Pod create received − schedule, p99", sec(func(r *run) time.Duration { return r.podLag.P99 }), bench.Millis},
		figure{"Pod create received − schedule, max", sec(func(r *run) time.Duration { return r.podLag.Max }), bench.Millis},
		figure{"API server time per accepted write (audit stage − receipt), p50", sec(func(r *run) time.Duration { return serverTime(r.lifecycle).P50 }), bench.Millis},
		figure{"API server time per accepted write, p99", sec(func(r *run) time.Duration { return serverTime(r.lifecycle).P99 }), bench.Millis},
		figure{"kube-apiserver CPU time per At, created → DONE", perAtSec(func(r *run) time.Duration { return r.planeLifecycle.apiserver }), tenthMillis},
		figure{"etcd CPU time per At, created → DONE", perAtSec(func(r *run) time.Duration { return r.planeLifecycle.etcd }), tenthMillis},
		figure{"kube-apiserver CPU time per At, (last) schedule → end of created → DONE", perAtSec(func(r *run) time.Duration { return r.planeAfterSchedule.apiserver }), tenthMillis},
		figure{"mean reconcile duration, created → DONE", func(r *run) float64 { return r.reconcileTime }, bench.Millis},
		figure{"CPU time of the process, start → all DONE", func(r *run) float64 { return r.cpu }, seconds},
		figure{"reads that waited for the cache to catch up with the process's own write, per At", func(r *run) float64 { return r.staleReads / float64(r.sc.n) }, nil},
		figure{"peak RSS of the process (VmHWM), created → DONE", func(r *run) float64 { return float64(r.hwm) }, bench.MiB},
		figure{"largest VmRSS sampled every 100 ms", func(r *run) float64 { return float64(r.sampledRSS) }, bench.MiB},
		figure{"startup: all requests (until it leads and watches)", func(r *run) float64 { return float64(len(r.startup)) }, nil},
		figure{fmt.Sprintf("resync (restart on %d DONE Ats): writes", sc.n), func(r *run) float64 { return float64(count(r.resync, isWrite)) }, nil},
		figure{"resync: requests beyond watches, Lease and discovery", func(r *run) float64 { return float64(count(r.resync, beyondWatches)) }, nil},
		figure{"resync: all requests", func(r *run) float64 { return float64(len(r.resync)) }, nil},
		figure{"resync: reconciles per At", func(r *run) float64 { return r.reconcilesResync / float64(r.sc.n) }, nil},
		figure{"deleting DONE Ats: accepted writes per At (events included)", perAt(func(r *run) int { return total(accepted(r.deletion)) }), nil},
	)
	for _, k := range deletionTargets {
		fs = append(fs, figure{"  `" + k + "` per At", perAt(func(r *run) int { return accepted(r.deletion)[k] }), nil})
	}
	return append(fs,
		figure{"deleting DONE Ats: all requests per At", perAt(func(r *run) int { return len(r.deletion) }), nil},
		figure{"deleting DONE Ats: reconciles per At", func(r *run) float64 { return r.reconcilesDeletion / float64(r.sc.n) }, nil},
		figure{"peak RSS of the restarted process (VmHWM), resync and deletion", func(r *run) float64 { return float64(r.resyncHWM) }, bench.MiB},
	)
}

// table renders one round of a trial: a column per controller, then the
// library's At over the hand-written one and over the naive one, and the At
// on controller-runtime's guard over the At on freshness.
func (t trial) table(rd round) *bench.Table {
	tab := &bench.Table{}
	col := map[kind]int{}
	var runs []*run
	for _, k := range t.kinds {
		if rd.runs[k] == nil {
			continue // not run in this round
		}
		col[k] = len(tab.Columns)
		tab.Columns = append(tab.Columns, k.heading())
		runs = append(runs, rd.runs[k])
	}
	for _, q := range [][2]kind{{libraryAt, handwrittenAt}, {libraryAt, classicAt}, {upstreamGuardAt, libraryAt}, {libraryAt, bareAt}, {libraryAt, libraryNoDietAt}, {libraryTracedAt, libraryAt}} {
		if rd.runs[q[0]] != nil && rd.runs[q[1]] != nil {
			tab.Ratios = append(tab.Ratios, bench.Ratio{Of: col[q[0]], Over: col[q[1]]})
		}
	}
	var lifecycle, deletion []map[string]int
	for _, r := range runs {
		lifecycle, deletion = append(lifecycle, accepted(r.lifecycle)), append(deletion, accepted(r.deletion))
	}
	for _, f := range runFigures(t.sc, targetsOf(lifecycle...), targetsOf(deletion...)) {
		values := make([]float64, len(runs))
		for i, r := range runs {
			values[i] = f.of(r)
		}
		tab.Add(f.metric, f.format, values...)
	}
	return tab
}

// TestSideBySideSmoke runs the benchmark's harness at 20 Ats (one instant
// with 4 workers, two rounds, with the At on controller-runtime's guard
// too; 20 unrelated Pods; a spread over 3 s) and its sharded scenario at 60
// Ats, so that it cannot rot, and checks counts (never timings): every
// request is attributed to its controller, one Pod per At, no write when
// resyncing DONE Ats for the controllers that record conditions, at most
// one write per At more than the naive controller from creation to DONE
// leaving events aside, the sharded replicas each holding their share and
// caching each At and Pod once between them, and the report renders. It
// checks no figure that depends on the machine's load: its trials, the
// sharded scenario and the write costs run side by side, each on a
// control plane of its own (plan.beside).
func TestSideBySideSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the controllers and starts a control plane of its own")
	}
	// Its own control plane and processes: it runs beside the package's
	// other scenarios that have theirs (see parallelTests).
	t.Parallel()
	started := time.Now()
	load := loadAverage()
	const writeCostN = 20
	const shardedN = 60
	cmp := compare(t, plan{sizes: []int{20}, workers: []int{4}, rounds: []int{2}, spreadN: 20, spread: 3 * time.Second,
		unrelated: 20, pace: 10 * time.Millisecond, writeCostN: writeCostN, sharded: shardedN, memory: true, memoryRounds: 1, tracing: true, beside: true})
	if len(cmp.writeCosts) != len(writeKinds()) {
		t.Errorf("%d kinds of write measured, want %d", len(cmp.writeCosts), len(writeKinds()))
	}
	for _, c := range cmp.writeCosts {
		// measureWriteKind fails the test when a watch (or, for Events, a
		// list) shows another number of writes than the kind sends.
		if want := writeCostRounds * writeCostN * c.kind.perAt; c.writes != want {
			t.Errorf("%s: %d writes seen in all, want %d", c.kind.name, c.writes, want)
		}
	}
	if got := len(cmp.trials); got != 3 || len(cmp.trials[0].rounds) != 2 || !cmp.trials[0].has(upstreamGuardAt) || !cmp.trials[0].has(libraryTracedAt) {
		t.Fatalf("%d trials, the first with %d rounds and controllers %v; want 3, 2 rounds, the At on controller-runtime's guard and traced", got, len(cmp.trials[0].rounds), cmp.trials[0].kinds)
	}
	for _, tr := range cmp.trials {
		for i, rd := range tr.rounds {
			t.Logf("%s, round %d:\n%s", tr.sc, i+1, tr.table(rd).Markdown())
			if len(rd.runs) != len(rd.order) {
				t.Errorf("%s, round %d: %d controllers ran, want %d", tr.sc, i+1, len(rd.runs), len(rd.order))
			}
			if i == 0 && tr.sc.spread == 0 && tr.sc.unrelated == 0 && (rd.runs[bareAt] == nil || rd.runs[libraryNoDietAt] == nil) {
				t.Errorf("%s, round 1: the memory comparison's controllers did not run: %v", tr.sc, rd.order)
			}
			for k, r := range rd.runs {
				if r.podsPerAt != 1 || len(r.podCreates) != tr.sc.n {
					t.Errorf("%s, %s: %d Ats got an accepted Pod create, up to %d Pods for one At; want %d and 1", tr.sc, k, len(r.podCreates), r.podsPerAt, tr.sc.n)
				}
				for at, n := range r.podCreates {
					if n != 1 {
						t.Errorf("%s, %s: At %s: %d Pod creates accepted, want 1", tr.sc, k, at, n)
					}
				}
				if r.reconcilesLifecycle < float64(tr.sc.n) || r.reconcilesResync < float64(tr.sc.n) {
					t.Errorf("%s, %s: %v reconciles from creation to DONE, %v on resync; want at least one per At", tr.sc, k, r.reconcilesLifecycle, r.reconcilesResync)
				}
				if len(r.startup) == 0 || count(r.startup, func(q bench.AuditRequest) bool { return classOf(q) == bench.ClassLeaderElection }) == 0 {
					t.Errorf("%s, %s: no startup or leader election request in the audit log: %v", tr.sc, k, r.startup)
				}
				if k != classicAt {
					if w := count(r.resync, isWrite); w != 0 {
						t.Errorf("%s: %s wrote %d times resyncing DONE Ats, want 0: %v", tr.sc, k, w, r.resync)
					}
				}
			}
			if r := rd.runs[libraryTracedAt]; r != nil && r.spans < float64(tr.sc.n) {
				// At least a reconcile's span per At: the overlay's exporter
				// is the one the traced At exports to.
				t.Errorf("%s, round %d: the traced At exported %v spans for %d Ats", tr.sc, i+1, r.spans, tr.sc.n)
			}
			theirs := rd.runs[classicAt]
			for _, k := range []kind{handwrittenAt, libraryAt, upstreamGuardAt, bareAt, libraryNoDietAt, libraryTracedAt} {
				r := rd.runs[k]
				if r == nil || r.ahead <= 0 || theirs.ahead <= 0 {
					continue
				}
				ours := count(r.lifecycle, func(q bench.AuditRequest) bool { return isWrite(q) && q.Accepted() && !isEventWrite(q) })
				naive := count(theirs.lifecycle, func(q bench.AuditRequest) bool { return isWrite(q) && q.Accepted() && !isEventWrite(q) })
				if ours > naive+tr.sc.n {
					t.Errorf("%s: %s made %d accepted writes other than events for %d Ats from creation to DONE, the naive controller %d: want at most one more per At",
						tr.sc, k, ours, tr.sc.n, naive)
				}
			}
		}
	}
	if cmp.sharded == nil {
		t.Fatal("no sharded scenario")
	}
	checkShardedTrial(t, *cmp.sharded, shardedN)
	report := renderReport(t, cmp, nil, started, load)
	for _, want := range []string{"reconcilekit ÷ hand-written", "| kube-apiserver | v1.", "20 Ats at one instant, 4 workers, round 2 of 2",
		"20 unrelated Pods", "### What each write costs the API server", "controller-runtime's guard against freshness", "Memory with 20 unrelated Pods",
		"## The At sharded (issue 25)", "Each sharded replica ÷ the single replica", "## Memory: what the caches hold (issue 38)", "bare client-go",
		"## Tracing: what it costs the At (issue 49)", "spans exported per At"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
