package bench_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// leaseTimings are a sharded At's leader election timings, for every one
// of its range Leases.
type leaseTimings struct{ duration, renew, retry time.Duration }

// shardTimings are the sharded replicas' timings in the harness: a 4 s
// lease, renewed every 500 ms (the retry period, which is also each
// Member's balancing round), given up after 3 s without a renewal. Short,
// so that the test and the kill's bound (lease duration + 2 retry periods,
// 5 s) stay short; the renew deadline is 6 rounds, so that a renewal delayed by
// a busy 2-core API server does not cost a replica its ranges; and the lease
// is 1 s longer than the renew deadline, so that a replica that stops
// renewing has stopped working (at the renew deadline) before another can
// take its ranges. The e2e tests use 8 s / 6 s / 1 s; the shard package's
// own tests 2 s / 1.5 s / 250 ms.
var shardTimings = leaseTimings{duration: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond}

// shardRanges is the --shards of the sharded At in the harness: up to six
// replicas can share the work, and one, two or three share it evenly.
const shardRanges = 6

// shardArgs are the flags that run the At sharded over shards ranges.
func shardArgs(shards int, lt leaseTimings) []string {
	return append([]string{fmt.Sprintf("--shards=%d", shards)}, leaseArgs(lt)...)
}

// leaseArgs are the flags that set the At's lease timings.
func leaseArgs(lt leaseTimings) []string {
	return []string{"--leader-elect-lease-duration", lt.duration.String(),
		"--leader-elect-renew-deadline", lt.renew.String(),
		"--leader-elect-retry-period", lt.retry.String()}
}

// rangeLeases returns whether a Lease name is that of one of the At's
// shards ranges (shard.Member's "<name>-<i>-of-<n>"), not a member Lease.
func rangeLeases(shards int) func(string) bool {
	names := map[string]bool{}
	for i := range shards {
		names[rangeLease(i, shards)] = true
	}
	return func(name string) bool { return names[name] }
}

func rangeLease(i, shards int) string { return fmt.Sprintf("at-%d-of-%d", i, shards) }

// startReplica runs the At binary sharded over shards ranges as a user of
// its own, its Leases in leaseNamespace.
func startReplica(tb testing.TB, pl *plane, bins binaries, user string, shards int, lt leaseTimings) *proc {
	tb.Helper()
	return startProc(tb, bins, libraryAt, user, procOptions{kubeconfig: pl.user(tb, user), workers: controller.DefaultWorkers,
		args: shardArgs(shards, lt)})
}

// rangesHeld is how many ranges the process's Member holds and admits work
// in (reconcilekit_shard_ranges_held).
func (p *proc) rangesHeld() (int, error) {
	v, n, err := p.scrape("reconcilekit_shard_ranges_held", map[string]string{"group": "at"})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no reconcilekit_shard_ranges_held yet", p.name)
	}
	return int(v), nil
}

// waitBalanced waits until the processes hold the shards ranges between
// them, each its share (shards / processes, rounded down or up), and
// returns how long that took.
func waitBalanced(tb testing.TB, procs []*proc, shards int, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	held := make([]int, len(procs))
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		total := 0
		for i, p := range procs {
			if p.exited() {
				return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
			}
			n, err := p.rangesHeld()
			if err != nil {
				return false, nil // not serving yet
			}
			held[i] = n
			total += n
		}
		lo, hi := shards/len(procs), (shards+len(procs)-1)/len(procs)
		for _, n := range held {
			if n < lo || n > hi {
				return false, nil
			}
		}
		return total == shards, nil
	})
	if err != nil {
		names := make([]string, len(procs))
		for i, p := range procs {
			names[i] = p.name
		}
		tb.Fatalf("%v never held the %d ranges evenly between them within %s (holding %v): %v", names, shards, timeout, held, err)
	}
	return time.Since(start)
}

// leaseWritesPerSecond is the rate of user's accepted Lease writes received
// in [from, to).
func leaseWritesPerSecond(reqs []bench.AuditRequest, user string, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	n := count(between(reqs, from, to), func(r bench.AuditRequest) bool {
		return r.User == user && r.Resource == "leases" && r.Write() && r.Accepted()
	})
	return float64(n) / to.Sub(from).Seconds()
}

// statusHistory records every distinct status each At of a namespace
// had, in order, from a watch that resumes where it stopped (one version
// per status write that changed something), and when each was first seen
// DONE.
type statusHistory struct {
	stop func()

	mu   sync.Mutex
	byAt map[string][]atv1.AtStatus
	done map[string]time.Time
	// lists counts the full lists: more than one means a watch could not
	// resume and versions may be missing.
	lists int
}

// startStatusHistory follows the Ats of namespace ns through c until its
// stop is called or the test ends.
func startStatusHistory(tb testing.TB, c client.WithWatch, ns string) *statusHistory {
	tb.Helper()
	h := &statusHistory{byAt: map[string][]atv1.AtStatus{}, done: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.follow(ctx, c, ns) })
	var once sync.Once
	h.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	tb.Cleanup(h.stop)
	return h
}

func (h *statusHistory) follow(ctx context.Context, c client.WithWatch, ns string) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			var l atv1.AtList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			h.mu.Lock()
			h.lists++
			h.mu.Unlock()
			for i := range l.Items {
				h.see(&l.Items[i])
			}
			rv = l.ResourceVersion
		}
		w, err := c.Watch(ctx, &atv1.AtList{}, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if at, ok := ev.Object.(*atv1.At); ok {
					h.see(at)
					rv = at.ResourceVersion
				}
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			case watch.Error:
				rv = "" // expired: list again
			}
		}
		w.Stop()
	}
}

func (h *statusHistory) see(at *atv1.At) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.byAt[at.Name]
	var last atv1.AtStatus
	if len(seen) > 0 {
		last = seen[len(seen)-1]
	}
	if !equality.Semantic.DeepEqual(last, at.Status) {
		h.byAt[at.Name] = append(seen, *at.Status.DeepCopy())
	}
	if _, ok := h.done[at.Name]; !ok && at.Status.Phase == atv1.PhaseDone {
		h.done[at.Name] = now
	}
}

// versions returns the statuses seen for each At, and how many times the
// watch listed.
func (h *statusHistory) versions() (map[string][]atv1.AtStatus, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.byAt), h.lists
}

// waitDone waits until n Ats have been seen DONE and returns when the last
// of them was.
func (h *statusHistory) waitDone(tb testing.TB, n int, timeout time.Duration) time.Time {
	tb.Helper()
	var last time.Time
	got := 0
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		got = len(h.done)
		if got < n {
			return false, nil
		}
		for _, t := range h.done {
			if t.After(last) {
				last = t
			}
		}
		return true, nil
	})
	if err != nil {
		tb.Fatalf("%d of %d Ats DONE after %s", got, n, timeout)
	}
	return last
}

// mayHaveApplied reports whether a write may have changed something: the
// server accepted it (2xx), or its outcome is unknown (a 5xx, or no code),
// as when the writer is killed with the request in flight: the server may
// still apply it, and logs a 504. A refused write (4xx) changed nothing.
func mayHaveApplied(r bench.AuditRequest) bool {
	return r.Write() && (r.Accepted() || r.ServerError() || r.Code == 0)
}

// writeCount counts the writes of one target on one At: accepted, and of
// unknown outcome (see mayHaveApplied).
type writeCount struct{ accepted, unknown int }

// allows reports whether the writes may have applied exactly want times:
// no more were accepted, and want is within reach with those of unknown
// outcome.
func (c writeCount) allows(want int) bool {
	return c.accepted <= want && want <= c.accepted+c.unknown
}

// phaseRank orders the phases an At goes through.
var phaseRank = map[atv1.Phase]int{"": 0, atv1.PhasePending: 1, atv1.PhaseRunning: 2, atv1.PhaseDone: 3}

// problems collects the failures of one check and reports how many there
// were with the first few, instead of thousands of lines.
type problems struct {
	what string
	list []string
}

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) report(tb testing.TB) {
	tb.Helper()
	if len(p.list) == 0 {
		return
	}
	shown := p.list[:min(len(p.list), 15)]
	tb.Errorf("%s: %d failures, the first %d:\n  %s", p.what, len(p.list), len(shown), strings.Join(shown, "\n  "))
}

// TestShardedAtsAreEachWrittenOnceByTheHolderOfTheirRange runs the At
// binary sharded (--shards=6, shardTimings), each replica a process of its
// own authenticated as a user of its own, on -at.proof.n Ats (500; issue
// 25 ran 3,000, see proofN) created over 60 s
// whose schedules are spread over 80 s, so that Ats are being created,
// waiting and running throughout: one replica alone, then three, one of
// them frozen (SIGSTOP) for a quarter of the lease duration, then one
// stopped gracefully (SIGTERM: 3 → 2), a fourth started and frozen for
// twice the lease duration (its ranges taken by the others) before it
// wakes (SIGCONT), and one killed (SIGKILL: 3 → 2) while Ats still fall
// due. Then, from the audit
// log: every At ends DONE with exactly one Pod; each At got exactly one
// accepted Pod create and one accepted finalizer patch, and as many
// accepted status writes as it had distinct statuses (seen on a watch),
// each a step forward (PENDING → RUNNING → DONE: no transition written
// twice); no other write touched an At or its Pod. A write the killed
// replica had in flight may have been applied with its response lost (the
// server logs a 5xx): it may stand for the accepted one it replaces, never
// add to it (see writeCount). Who held which range when is reconstructed
// from the Lease writes in the same log (see holdings), and must follow
// leader election's rules; every write to an At (ats, ats/status) or its
// Pod by a replica, accepted or refused, was received while that replica
// held the At's range: the one woken from a freeze past its Leases sends
// nothing for the ranges it lost (issue 46), and ended the term of each
// range it held as it woke (its metric says so). The replica frozen for
// less than the lease keeps every range.
// The stopped replica's ranges are taken within two of the takers'
// balancing rounds after their release, the killed one's within three
// after their Leases ran out, plus one for each other Lease of the killed
// replica, whose expiry starts a round too (counted in rounds, which a
// loaded machine slows, not in seconds: no timing is asserted). The
// seconds are logged against the bounds (2 s graceful; a lease
// duration and two retry periods after the kill).
//
// That on an API server with the gate ShardedListAndWatch off, which
// ignores the replicas' ShardSelector, so that each replica's cache
// filters the watch in the process, and at the same time on one with the
// gate on, which honours it.
func TestShardedAtsAreEachWrittenOnceByTheHolderOfTheirRange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the At and starts a control plane of its own")
	}
	// Its own control planes and processes: it runs beside the smoke and
	// the tests of managers in this process (see parallelTests), not beside
	// the API server restarts (see planeMu). The two gates run side by
	// side, each on a plane and replicas of its own (see proofN).
	if *proofN < 2 {
		t.Fatalf("-at.proof.n=%d: the proof needs at least 2 Ats, to spread their schedules", *proofN)
	}
	t.Parallel()
	lockPlane(t)
	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "gate off", true: "gate on"}[gated]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testShardedAts(t, gated, *proofN)
		})
	}
}

// proofN is how many Ats the sharded audit proof creates, with each gate;
// the two gates run at once. make test runs 500 with each on 2 cores: a
// run costs the machine about 29 s of CPU plus 38 s per 1,000 Ats (-race),
// all within the same 100 s, so that the two together load it as one run
// of 1,000 did when they took turns, in half the time. 3,000 (issue 25's
// scenario) took about 1.4 cores by itself, and beside the rest of make
// test starved the replicas it measures (rounds every 1-1.6 s instead of
// 0.5 s, the last At DONE 2 minutes late). At 500 Ats a third of them
// still change hands while in progress. Issue 25's 3,000: go test -run
// TestShardedAtsAreEachWrittenOnceByTheHolderOfTheirRange
// ./examples/at/bench/ -args -at.proof.n=3000.
var proofN = flag.Int("at.proof.n", 500, "Ats of the sharded audit proof, with each gate, both at once (issue 25's scenario: 3000)")

func testShardedAts(t *testing.T, gated bool, n int) {
	began := time.Now()
	const (
		createOver = 60 * time.Second
		firstDue   = 5 * time.Second // after the first creation
		spreadOver = 80 * time.Second
		// The replicas come and go at these offsets from the first
		// creation.
		scaleUpAt     = 10 * time.Second
		freezeShortAt = 20 * time.Second
		stopAt        = 30 * time.Second
		joinAt        = 40 * time.Second
		freezeAt      = 45 * time.Second
		killAt        = 60 * time.Second
		balancedIn    = 30 * time.Second // a bound for the waits, not asserted
	)
	lt := shardTimings
	bins := buildAt(t)
	pl := startPlaneGated(t, gated)
	ns := pl.namespace(t, "sharded")
	const userPrefix = "sharded-"
	tail := pl.tailUsers(t, "the sharded replicas", func(u string) bool { return strings.HasPrefix(u, userPrefix) })
	kl := startKubeletOn(t, pl.admin, ns, podRunTime)
	hist := startStatusHistory(t, pl.admin, ns)
	start := func(name string) *proc { return startReplica(t, pl, bins, userPrefix+name, shardRanges, lt) }

	a := start("a")
	waitBalanced(t, []*proc{a}, shardRanges, balancedIn)

	createStart := time.Now()
	ats := make([]*atv1.At, n)
	for i := range ats {
		due := createStart.Add(firstDue + spreadOver*time.Duration(i)/time.Duration(n-1)).Truncate(time.Millisecond)
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), due)
	}
	created := make(chan error, 1)
	go func() {
		created <- eachPaced(ats, createOver/time.Duration(n), func(at *atv1.At) error { return pl.admin.Create(context.Background(), at) })
	}()
	offset := func() time.Duration { return time.Since(createStart).Round(time.Millisecond) }

	time.Sleep(time.Until(createStart.Add(scaleUpAt)))
	scaleUp := time.Now()
	b, c := start("b"), start("c")
	toThree := waitBalanced(t, []*proc{a, b, c}, shardRanges, balancedIn)
	balanced3 := time.Now()
	t.Logf("+%s: 1 → 3 replicas, balanced (2 ranges each) %s after the two started", scaleUp.Sub(createStart).Round(time.Millisecond), toThree.Round(time.Millisecond))

	// A freeze shorter than the lease (a GC pause): a keeps its ranges.
	time.Sleep(time.Until(createStart.Add(freezeShortAt)))
	shortFrozen, shortWoken := a.freeze(t, lt.duration/4)
	t.Logf("+%s: %s frozen (SIGSTOP) for %s, a quarter of the lease duration", shortFrozen.Sub(createStart).Round(time.Millisecond), a.name, shortWoken.Sub(shortFrozen).Round(time.Millisecond))

	time.Sleep(time.Until(createStart.Add(stopAt)))
	// The graceful stop is judged on the ranges b releases: it must hold
	// its share when stopped. On a loaded machine (requests received
	// seconds after they were sent) a renewal can miss the renew deadline
	// and a range move meanwhile: wait until the three are balanced again.
	waitBalanced(t, []*proc{a, b, c}, shardRanges, balancedIn)
	stopped := time.Now()
	b.stop(t) // SIGTERM, and wait for it to exit
	if b.waitErr != nil {
		t.Errorf("%s, stopped with SIGTERM, exited with %v", b.name, b.waitErr)
	}
	t.Logf("+%s: %s stopped gracefully (SIGTERM), exited %s later", stopped.Sub(createStart).Round(time.Millisecond), b.name, time.Since(stopped).Round(time.Millisecond))
	waitBalanced(t, []*proc{a, c}, shardRanges, balancedIn)

	time.Sleep(time.Until(createStart.Add(joinAt)))
	d := start("d")
	waitBalanced(t, []*proc{a, c, d}, shardRanges, balancedIn)
	balancedD := time.Now()
	t.Logf("+%s: %s joined, 3 replicas balanced", offset(), d.name)

	// A freeze past the lease (a long GC pause, a paused VM): the others
	// take d's ranges, and d, woken, must write nothing for them.
	time.Sleep(time.Until(createStart.Add(freezeAt)))
	dRanges, err := d.rangesHeld()
	if err != nil {
		t.Fatal(err)
	}
	frozen, woken := d.freeze(t, 2*lt.duration)
	t.Logf("+%s: %s, holding %d ranges, frozen (SIGSTOP) for %s, twice the lease duration", frozen.Sub(createStart).Round(time.Millisecond), d.name, dRanges, woken.Sub(frozen).Round(time.Millisecond))
	rebalanced := waitBalanced(t, []*proc{a, c, d}, shardRanges, balancedIn)
	t.Logf("+%s: %s woken, 3 replicas balanced again %s after", offset(), d.name, rebalanced.Round(time.Millisecond))
	// Every range d held when it froze was confirmed last before the
	// freeze, longer than the renew deadline before it woke: each term
	// ended, and the work in it was cancelled, as d woke.
	if ended := d.metric(t, "reconcilekit_shard_fenced_total", map[string]string{"group": "at", "at": "term"}); ended < float64(dRanges) {
		t.Errorf("%s, woken from a freeze past its Leases, ended %v terms of its ranges, want at least the %d it held", d.name, ended, dRanges)
	}
	fencedWrites, _, _ := d.scrape("reconcilekit_shard_fenced_total", map[string]string{"group": "at", "at": "write"})
	fencedEnters, _, _ := d.scrape("reconcilekit_shard_fenced_total", map[string]string{"group": "at", "at": "enter"})
	t.Logf("%s, woken: %v writes and %v reconciles refused by its fence", d.name, fencedWrites, fencedEnters)

	time.Sleep(time.Until(createStart.Add(killAt)))
	killed := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s: %v", c.name, err)
	}
	<-c.done
	t.Logf("+%s: %s killed (SIGKILL)", killed.Sub(createStart).Round(time.Millisecond), c.name)
	afterKill := waitBalanced(t, []*proc{a, d}, shardRanges, balancedIn)
	balanced2 := time.Now()
	t.Logf("+%s: %s and %s hold 3 ranges each, %s after the kill", offset(), a.name, d.name, afterKill.Round(time.Millisecond))

	if err := <-created; err != nil {
		t.Fatalf("creating the Ats: %v", err)
	}
	lastDone := hist.waitDone(t, n, 3*time.Minute)
	tail.waitQuiet(t, lastDone, quietPeriod, time.Minute)
	t.Logf("+%s: every At DONE (the last %s after the last schedule)", lastDone.Sub(createStart).Round(time.Millisecond),
		lastDone.Sub(createStart.Add(firstDue+spreadOver)).Round(time.Millisecond))
	end := time.Now()
	reqs := tail.read(t)
	hist.stop()
	kl.stop()

	// Every At DONE with exactly one Pod.
	atItems, podItems := listDone(t, pl, ns, "", n, kl.podsSeen())

	// Who held which range when, from the Lease writes.
	hs, broken := holdings(reqs, rangeLeases(shardRanges))
	leaseRules := problems{what: "the range Leases changed hands as leader election allows", list: broken}
	leaseRules.report(t)

	// The freezes: a, frozen for a quarter of the lease, kept every range;
	// d, frozen for two, lost every one it held.
	for _, h := range hs {
		if h.user == a.name && h.contains(shortFrozen) && h.end != endReleased && h.to.Before(shortWoken.Add(lt.duration)) {
			t.Errorf("%s, frozen for %s, lost %s (%s at %s): a freeze shorter than the lease must keep the range", a.name,
				shortWoken.Sub(shortFrozen).Round(time.Millisecond), h.lease, h.end, stamp(h.to))
		}
	}
	lostInFreeze := 0
	for _, h := range hs {
		if h.user == d.name && h.contains(frozen) && h.end != endReleased && h.to.Before(woken) {
			lostInFreeze++
		}
	}
	if lostInFreeze < dRanges {
		t.Errorf("%s lost %d ranges while frozen past its Leases, want the %d it held: the freeze proved nothing", d.name, lostInFreeze, dRanges)
	}
	if accepted, refused := writesHoldingNothing(reqs, hs, d.name, woken); accepted+refused > 0 {
		t.Errorf("%s, woken from a freeze past its Leases, wrote %d times (%d accepted) while it held no range", d.name, accepted+refused, accepted)
	}

	// Each At's and each Pod's writes: how many, by whom, when; each
	// received while its writer held the At's range.
	fenced := problems{what: "every write to an At or its Pod, accepted or refused, received while its writer held the At's range"}
	writes, perTarget, unknownOutcome := auditAtWrites(t, reqs, ns, atItems, podItems, outOfTurn(&fenced, hs, rangeLeaseOf(atItems)))
	fenced.report(t)

	versions, lists := hist.versions()
	if lists != 1 {
		t.Errorf("the watch of the Ats' statuses listed %d times, want 1: versions may be missing", lists)
	}
	once := problems{what: "each At: one Pod create, one finalizer patch, one status write per status, each a step forward, nothing else"}
	moved := 0
	for _, at := range atItems {
		if w := writes[at.Name]; w != nil && len(w.users) > 1 {
			moved++
		}
		statuses := versions[at.Name]
		wrong := checkAtWrites(writes[at.Name], func(c writeCount) bool { return c.allows(len(statuses)) })
		prev := atv1.Phase("")
		for _, st := range statuses {
			if phaseRank[st.Phase] <= phaseRank[prev] {
				wrong = append(wrong, "a status that did not move the phase forward")
				break
			}
			prev = st.Phase
		}
		if len(wrong) > 0 {
			once.add("%s: %s; statuses %v", at.Name, strings.Join(wrong, "; "), phasesOf(statuses))
		}
	}
	once.report(t)
	if moved == 0 {
		t.Errorf("no At was written by more than one replica: the ranges never changed hands under work")
	}

	// The hand-overs, in the takers' balancing rounds (each begins with a
	// member Lease renewal): a range a replica released is taken in the
	// first round that sees it free; a range whose holder died, in the
	// first round at or after its expiry by the taker's clock (which saw
	// the last renewal up to a round late), or the next one if another
	// survivor won the same range first: three rounds. A replica also runs
	// a round the moment another's Lease expires by its clock (see
	// shard.Member), so each other Lease of the dead replica (its member
	// Lease, its other ranges) may add one in between: a run with rounds
	// on time (560 ms at the median) saw 4 for 2 ranges. Counted in rounds, not seconds, so that
	// a loaded machine's slower rounds do not fail the test; the seconds
	// are logged against the bounds.
	renewals := map[string][]time.Time{} // each round creates or updates the member Lease
	for _, r := range reqs {
		if r.Resource == "leases" && strings.HasPrefix(r.Name, "at-member-") && (r.Verb == "create" || r.Verb == "update") && r.Accepted() {
			renewals[r.User] = append(renewals[r.User], r.Received)
		}
	}
	graceful := handoverAfter(hs, b.name, stopped)
	gracefulRounds := roundsToTake(hs, b.name, stopped, renewals)
	if len(graceful.leases) == 0 || !graceful.taken || gracefulRounds < 0 || gracefulRounds > 2 {
		t.Errorf("%s held %v when stopped gracefully; held by others %s later (all taken: %t), in up to %d rounds of the takers after the release, want at most 2",
			b.name, graceful.leases, graceful.after, graceful.taken, gracefulRounds)
	}
	for lease, end := range graceful.ends {
		if end != endReleased {
			t.Errorf("%s, stopped gracefully, did not release %s: its holding %s", b.name, lease, end)
		}
	}
	kill := handoverAfter(hs, c.name, killed)
	killRounds := roundsToTake(hs, c.name, killed, renewals)
	// 3, and one per other Lease of c: its member Lease and its other ranges.
	maxKillRounds := 3 + len(kill.leases)
	if len(kill.leases) == 0 || !kill.taken || killRounds < 0 || killRounds > maxKillRounds {
		t.Errorf("%s held %v when killed; held by others %s later (all taken: %t), in up to %d rounds of the takers after the Leases ran out, want at most %d",
			c.name, kill.leases, kill.after, kill.taken, killRounds, maxKillRounds)
	}

	// The figures.
	t.Logf("graceful stop of %s: its %d ranges %v released and held by others %s after SIGTERM (the issue's bound: 2 s), in up to %d of the takers' rounds",
		b.name, len(graceful.leases), graceful.leases, graceful.after.Round(time.Millisecond), gracefulRounds)
	t.Logf("kill of %s: its %d ranges %v held by others %s after SIGKILL (lease duration %s + 2 × retry period: %s), in up to %d of the takers' rounds after they ran out",
		c.name, len(kill.leases), kill.leases, kill.after.Round(time.Millisecond), lt.duration, lt.duration+2*lt.retry, killRounds)
	for _, lease := range kill.leases {
		var line []string
		for _, h := range hs {
			switch {
			case h.lease != lease:
			case h.user == c.name && h.to.After(killed):
				line = append(line, fmt.Sprintf("last renewed by %s %s before the kill, its lease ran out %s after it", c.name,
					killed.Sub(h.lastWrite).Round(time.Millisecond), h.to.Sub(killed).Round(time.Millisecond)))
			case h.user != c.name && h.from.After(killed) && len(line) == 1:
				line = append(line, fmt.Sprintf("taken by %s %s after it", h.user, h.from.Sub(killed).Round(time.Millisecond)))
			}
		}
		t.Logf("  %s: %s", lease, strings.Join(line, ", "))
	}
	var per []string
	for _, k := range slices.Sorted(maps.Keys(perTarget)) {
		per = append(per, fmt.Sprintf("%s %.2f", k, float64(perTarget[k])/float64(n)))
	}
	events := count(reqs, func(r bench.AuditRequest) bool { return isEventWrite(r) && r.Accepted() })
	t.Logf("accepted writes per At: %s; events %.2f; %d Ats (%.0f%%) written by more than one replica as their range moved",
		strings.Join(per, ", "), float64(events)/float64(n), moved, 100*float64(moved)/float64(n))
	t.Logf("writes of unknown outcome (the server answered 5xx: the killed replica's requests in flight): %d %v", len(unknownOutcome), unknownOutcome)
	for _, w := range []struct {
		what     string
		procs    []*proc
		from, to time.Time
	}{
		{"3 replicas, 2 ranges each", []*proc{a, b, c}, balanced3, stopped},
		{"3 replicas after the join, 2 ranges each", []*proc{a, c, d}, balancedD, killed},
		{"2 replicas after the kill, 3 ranges each", []*proc{a, d}, balanced2, end},
	} {
		var rates []string
		for _, p := range w.procs {
			rates = append(rates, fmt.Sprintf("%s %.1f", p.name, leaseWritesPerSecond(reqs, p.name, w.from, w.to)))
		}
		t.Logf("Lease writes per second per replica, %s (%s): %s", w.what, w.to.Sub(w.from).Round(100*time.Millisecond), strings.Join(rates, ", "))
	}
	// How long a balancing round takes: the time between a replica's
	// member Lease renewals.
	for _, u := range slices.Sorted(maps.Keys(renewals)) {
		times := renewals[u]
		if len(times) < 2 {
			continue
		}
		gaps := make([]time.Duration, len(times)-1)
		for i := range gaps {
			gaps[i] = times[i+1].Sub(times[i])
		}
		d := bench.Summarize(gaps)
		t.Logf("%s: a balancing round (member Lease renewal) every %s at the median, %s at p99, %s at most (retry period %s)",
			u, d.P50.Round(time.Millisecond), d.P99.Round(time.Millisecond), d.Max.Round(time.Millisecond), lt.retry)
	}
	t.Logf("the test took %s", time.Since(began).Round(time.Second))
}

// listDone lists the Ats and Pods of ns and checks that there are n Ats,
// each DONE with exactly one Pod and, when seen is not nil, whose Pod the
// kubelet saw once (seen, by At); what prefixes the failures.
func listDone(t *testing.T, pl *plane, ns, what string, n int, seen map[string]int) ([]atv1.At, []corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	var atList atv1.AtList
	if err := pl.admin.List(ctx, &atList, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var podList corev1.PodList
	if err := pl.admin.List(ctx, &podList, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	podsOf := map[string]int{}
	for i := range podList.Items {
		podsOf[atOf(&podList.Items[i])]++
	}
	done := problems{what: what + "every At DONE with exactly one Pod"}
	if len(atList.Items) != n {
		done.add("%d Ats, want %d", len(atList.Items), n)
	}
	for _, at := range atList.Items {
		if at.Status.Phase != atv1.PhaseDone || podsOf[at.Name] != 1 || seen != nil && seen[at.Name] != 1 {
			done.add("%s: phase %q, %d Pods now, %d seen by the kubelet", at.Name, at.Status.Phase, podsOf[at.Name], seen[at.Name])
		}
	}
	done.report(t)
	return atList.Items, podList.Items
}

// outOfTurn returns a check for auditAtWrites that adds to p each write
// received while its writer did not hold, by hs, the Lease that leaseOf
// names for the At it is for.
func outOfTurn(p *problems, hs []holding, leaseOf func(at string) string) func(bench.AuditRequest, string) {
	return func(r bench.AuditRequest, at string) {
		lease := leaseOf(at)
		// A write the server answered 5xx is of unknown outcome, and on a
		// loaded server its received time may lag its sending (the
		// fence's check) by seconds: listed with the unknown outcomes,
		// not judged here. Accepted and refused writes are.
		if r.ServerError() {
			return
		}
		if _, ok := heldBy(hs, lease, r.User, r.Received); !ok {
			p.add("%s: %s %s of At %s at %s (%d), without holding %s", r.User, r.Target(), r.Name, at,
				stamp(r.Received), r.Code, lease)
		}
	}
}

// rangeLeaseOf returns the name of the Lease of the range of each of ats,
// by name.
func rangeLeaseOf(ats []atv1.At) func(at string) string {
	lease := map[string]string{}
	for i := range ats {
		rng, _ := ranges.Of(&ats[i], shardRanges)
		lease[ats[i].Name] = rangeLease(rng, shardRanges)
	}
	return func(at string) string { return lease[at] }
}

// atWrites are the writes to one At and its Pod that may have been applied.
type atWrites struct {
	counts map[string]writeCount // by target
	users  map[string]bool
	// all are every request on the At or its Pod, for the failures.
	all []string
}

// auditAtWrites collects, from the audit log, the writes to each of ats
// (in namespace ns) and to its Pod that may have been applied, with check
// called on every write to them, accepted or refused; a write to an At or
// Pod that is none of them fails the test. It returns the writes by At, the accepted ones by target in all,
// and those of unknown outcome.
//
// A create logged only as received names no object (the API server learns
// the name from the body, after that line): such Pod creates in ns are
// given to the Ats whose Pod (one of pods) has no create in the log, see
// unnamedCreates.
func auditAtWrites(t *testing.T, reqs []bench.AuditRequest, ns string, ats []atv1.At, pods []corev1.Pod, check func(r bench.AuditRequest, at string)) (map[string]*atWrites, map[string]int, []string) {
	t.Helper()
	isAt := map[string]bool{}
	podAt := map[string]string{}
	for i := range ats {
		isAt[ats[i].Name] = true
		podAt[controller.PodName(&ats[i])] = ats[i].Name
	}
	writes := map[string]*atWrites{}
	perTarget := map[string]int{}
	var unknownOutcome []string
	unknown := problems{what: "every write to an At or a Pod is to one of the test's Ats or their Pods"}
	var unnamed []bench.AuditRequest
	add := func(name string, r bench.AuditRequest) {
		w := writes[name]
		if w == nil {
			w = &atWrites{counts: map[string]writeCount{}, users: map[string]bool{}}
			writes[name] = w
		}
		w.all = append(w.all, fmt.Sprintf("%s→%s %s %s %s %d", stamp(r.Received), stamp(r.Staged), r.User, r.Target(), cmp.Or(r.Name, "(unnamed)"), r.Code))
		if check != nil && r.Write() {
			// Refused writes too: a replica sends nothing out of turn.
			check(r, name)
		}
		if !mayHaveApplied(r) {
			return
		}
		c := w.counts[r.Target()]
		if r.Accepted() {
			c.accepted++
			perTarget[r.Target()]++
		} else {
			c.unknown++
			unknownOutcome = append(unknownOutcome, fmt.Sprintf("%s %s %s at %s: %d", r.User, r.Target(), cmp.Or(r.Name, "(unnamed)"), stamp(r.Received), r.Code))
		}
		w.counts[r.Target()] = c
		w.users[r.User] = true
	}
	for _, r := range reqs {
		if r.Resource == "pods" && r.Name == "" && r.Verb == "create" && r.Namespace == ns && !r.Accepted() && mayHaveApplied(r) {
			unnamed = append(unnamed, r)
			continue
		}
		if r.Resource != "ats" && r.Resource != "pods" || r.Name == "" {
			continue
		}
		name := r.Name
		if r.Resource == "pods" {
			name = podAt[r.Name]
		}
		ok := isAt[name]
		if (!ok || r.Namespace != ns) && mayHaveApplied(r) {
			unknown.add("%s: %s %s/%s (%d)", r.User, r.Target(), r.Namespace, r.Name, r.Code)
		}
		if !ok {
			continue
		}
		add(name, r)
	}
	given := unnamedCreates(unnamed, pods, writes)
	for _, at := range slices.Sorted(maps.Keys(given)) {
		add(at, given[at])
	}
	unknown.report(t)
	return writes, perTarget, unknownOutcome
}

// unnamedCreates gives each Pod of pods whose At has no Pod create in
// writes one of the unnamed Pod creates of unknown outcome, received no
// later than the Pod's creationTimestamp (whole seconds) and not given to
// another, preferring one sent by a user that wrote to the At otherwise.
// A kube-apiserver killed while it handles a create may have stored the
// Pod and logged only that it received a request to create some Pod; a
// create no Pod needs is left over (and had it applied, its At would have
// two Pods, which the tests refuse).
func unnamedCreates(unnamed []bench.AuditRequest, pods []corev1.Pod, writes map[string]*atWrites) map[string]bench.AuditRequest {
	var missing []*corev1.Pod
	for i := range pods {
		at := atOf(&pods[i])
		if at == "" {
			continue
		}
		if w := writes[at]; w == nil || w.counts["create pods"] == (writeCount{}) {
			missing = append(missing, &pods[i])
		}
	}
	// Every create a Pod may take may be taken by each Pod created later
	// too: taking them in creation order never leaves one without a create
	// another assignment would have found.
	slices.SortFunc(missing, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	used := make([]bool, len(unnamed))
	given := map[string]bench.AuditRequest{}
	for _, pod := range missing {
		at := atOf(pod)
		best := -1
		for i, r := range unnamed {
			if used[i] || r.Received.Truncate(time.Second).After(pod.CreationTimestamp.Time) {
				continue
			}
			if best < 0 || writes[at] != nil && writes[at].users[r.User] && !writes[at].users[unnamed[best].User] {
				best = i
			}
		}
		if best >= 0 {
			used[best] = true
			given[at] = unnamed[best]
		}
	}
	return given
}

// checkAtWrites says what is wrong with one At's writes: anything but one
// Pod create and one finalizer patch, or status writes statusOK refuses.
func checkAtWrites(w *atWrites, statusOK func(writeCount) bool) []string {
	if w == nil {
		return []string{"no write"}
	}
	targets := map[string]bool{"create pods": true, "patch ats": true, "patch ats/status": true}
	for k := range w.counts {
		targets[k] = true
	}
	var wrong []string
	for _, target := range slices.Sorted(maps.Keys(targets)) {
		c := w.counts[target]
		ok := false
		switch target {
		case "create pods", "patch ats":
			ok = c.allows(1)
		case "patch ats/status":
			ok = statusOK(c)
		}
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s: %d accepted + %d of unknown outcome", target, c.accepted, c.unknown))
		}
	}
	if len(wrong) > 0 {
		wrong = append(wrong, fmt.Sprintf("written by %v; its requests: %s", slices.Sorted(maps.Keys(w.users)), strings.Join(w.all, ", ")))
	}
	return wrong
}

func phasesOf(sts []atv1.AtStatus) []atv1.Phase {
	out := make([]atv1.Phase, len(sts))
	for i, st := range sts {
		out[i] = st.Phase
	}
	return out
}

// TestAuditAtWritesGivesUnnamedCreatesToPodsWithoutOne is the case CI met
// when kube-apiserver was killed under Pod creates: their only line was
// RequestReceived, which names no Pod, and the Pods existed. Each Pod
// without a create in the log takes one such create received before it
// was created (by a user that wrote its At, when there is one); a Pod
// created before any is left without one, and the check says so.
func TestAuditAtWritesGivesUnnamedCreatesToPodsWithoutOne(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 17, 37, 0, time.UTC)
	var ats []atv1.At
	var pods []corev1.Pod
	for i, name := range []string{"at-named", "at-same-user", "at-other-user", "at-too-early"} {
		at := newAt("n", name, t0)
		at.UID = types.UID(fmt.Sprintf("%08d-uid", i))
		ats = append(ats, *at)
		created := map[string]time.Time{"at-too-early": t0.Add(-5 * time.Second)}[name]
		if created.IsZero() {
			created = t0.Add(2 * time.Second)
		}
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "n", Name: controller.PodName(at), CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: atv1.GroupVersion.String(), Kind: "At", Name: name, UID: at.UID, Controller: ptr.To(true)}},
		}})
	}
	req := func(user, verb, resource, sub, name string, code int, at time.Time) bench.AuditRequest {
		return bench.AuditRequest{ID: fmt.Sprintf("%s-%s-%s-%s-%s", user, verb, resource, name, at), User: user, Verb: verb,
			Resource: resource, Subresource: sub, Namespace: "n", Name: name, Code: code, Received: at, Staged: at}
	}
	reqs := []bench.AuditRequest{
		req("u1", "patch", "ats", "", "at-named", 200, t0.Add(-9*time.Second)),
		req("u1", "patch", "ats", "", "at-same-user", 200, t0.Add(-9*time.Second)),
		req("u2", "patch", "ats", "", "at-other-user", 200, t0.Add(-9*time.Second)),
		req("u1", "patch", "ats", "", "at-too-early", 200, t0.Add(-9*time.Second)),
		req("u1", "create", "pods", "", controller.PodName(&ats[0]), 201, t0),
		// Received only: the API server died before naming the Pod.
		req("u2", "create", "pods", "", "", 0, t0),
		req("u1", "create", "pods", "", "", 0, t0.Add(500*time.Millisecond)),
		// Refused: it applied nothing and may be given to no Pod.
		req("u1", "create", "pods", "", "", 409, t0),
	}
	writes, _, unknownOutcome := auditAtWrites(t, reqs, "n", ats, pods, nil)
	for _, tc := range []struct {
		at   string
		want writeCount
		user string
	}{
		{at: "at-named", want: writeCount{accepted: 1}, user: "u1"},
		{at: "at-same-user", want: writeCount{unknown: 1}, user: "u1"},
		{at: "at-other-user", want: writeCount{unknown: 1}, user: "u2"},
		{at: "at-too-early", want: writeCount{}},
	} {
		w := writes[tc.at]
		if got := w.counts["create pods"]; got != tc.want {
			t.Errorf("%s: create pods %+v, want %+v", tc.at, got, tc.want)
		}
		if tc.user != "" && !w.users[tc.user] {
			t.Errorf("%s: written by %v, want %s among them", tc.at, slices.Sorted(maps.Keys(w.users)), tc.user)
		}
		wrong := checkAtWrites(w, func(writeCount) bool { return true })
		if ok := tc.want != (writeCount{}); ok != (len(wrong) == 0) {
			t.Errorf("%s: checkAtWrites says %q", tc.at, wrong)
		}
	}
	if len(unknownOutcome) != 2 {
		t.Errorf("writes of unknown outcome %q, want the two unnamed creates given to Pods", unknownOutcome)
	}
}
