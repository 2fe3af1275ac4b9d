package bench_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

// freezeN is how many Ats the run of issue 46's scenario creates; 0 (the
// default) skips it: make test proves the freeze at the scale of the
// sharded proof, with its short Leases.
var freezeN = flag.Int("at.freeze.n", 0, "Ats of issue 46's frozen-replica scenario (its run: 1000); 0 skips it")

// TestAReplicaFrozenPastItsLeasesWritesNothingForTheRangesItLost is issue
// 46's scenario, run on demand (-at.freeze.n=1000): the At binary with
// --shards=6 as three replicas with the At's default Leases (15 s, renewed
// within 10 s every 2 s), -at.freeze.n Ats due over 80 s, and one replica
// frozen (SIGSTOP) for 25 s, 15 s after the first schedule, then woken
// (SIGCONT). Every At ends DONE with exactly one Pod, and from the audit
// log, no write to an At or its Pod, accepted or refused, was received
// from a replica that did not hold the At's range then; the frozen
// replica's writes after it woke are counted.
//
//	go test -run TestAReplicaFrozenPastItsLeasesWritesNothingForTheRangesItLost ./examples/at/bench/ -args -at.freeze.n=1000
func TestAReplicaFrozenPastItsLeasesWritesNothingForTheRangesItLost(t *testing.T) {
	n := *freezeN
	if n == 0 {
		t.Skip("issue 46's scenario runs with -at.freeze.n=1000")
	}
	if n < 2 {
		t.Fatalf("-at.freeze.n=%d: at least 2 Ats, to spread their schedules", n)
	}
	lockPlane(t)
	const (
		firstDue   = 30 * time.Second // after the first creation
		spreadOver = 80 * time.Second
		createOver = 25 * time.Second
		freezeAt   = firstDue + 15*time.Second
		freezeFor  = 25 * time.Second
	)
	bins := buildAt(t)
	pl := startPlaneGated(t, false)
	ns := pl.namespace(t, "frozen")
	const userPrefix = "frozen-"
	tail := pl.tailUsers(t, "the frozen scenario's replicas", func(u string) bool { return strings.HasPrefix(u, userPrefix) })
	kl := startKubeletOn(t, pl.admin, ns, podRunTime)
	hist := startStatusHistory(t, pl.admin, ns)
	var procs []*proc
	for _, name := range []string{"a", "b", "c"} {
		procs = append(procs, startReplica(t, pl, bins, userPrefix+name, shardRanges, defaultTimings))
	}
	waitBalanced(t, procs, shardRanges, 2*time.Minute)

	createStart := time.Now()
	ats := make([]*atv1.At, n)
	for i := range ats {
		due := createStart.Add(firstDue + spreadOver*time.Duration(i)/time.Duration(n-1)).Truncate(time.Millisecond)
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), due)
	}
	createPaced(t, pl.admin, ats, createOver/time.Duration(n))
	time.Sleep(time.Until(createStart.Add(freezeAt)))
	c := procs[2]
	held, err := c.rangesHeld()
	if err != nil {
		t.Fatal(err)
	}
	frozen, woken := c.freeze(t, freezeFor)
	t.Logf("%s, holding %d ranges, frozen for %s", c.name, held, woken.Sub(frozen).Round(time.Millisecond))
	lastDone := hist.waitDone(t, n, 5*time.Minute)
	tail.waitQuiet(t, lastDone, quietPeriod, time.Minute)
	reqs := tail.read(t)
	hist.stop()
	kl.stop()

	atItems, podItems := listDone(t, pl, ns, "", n, kl.podsSeen())
	hs, broken := holdings(reqs, rangeLeases(shardRanges))
	leaseRules := problems{what: "the range Leases changed hands as leader election allows", list: broken}
	leaseRules.report(t)
	lost := 0
	for _, h := range hs {
		if h.user == c.name && h.contains(frozen) && h.end != endReleased && h.to.Before(woken) {
			lost++
		}
	}
	if lost < held {
		t.Errorf("%s lost %d ranges while frozen, want the %d it held: the freeze proved nothing", c.name, lost, held)
	}
	fenced := problems{what: "every write to an At or its Pod, accepted or refused, received while its writer held the At's range"}
	auditAtWrites(t, reqs, ns, atItems, podItems, outOfTurn(&fenced, hs, rangeLeaseOf(atItems)))
	fenced.report(t)

	accepted, refused := writesHoldingNothing(reqs, hs, c.name, woken)
	t.Logf("%s, woken, while it held no range: %d writes accepted, %d refused, besides its Leases", c.name, accepted, refused)
	if accepted+refused > 0 {
		t.Errorf("%s wrote %d times while it held no range", c.name, accepted+refused)
	}
	events := count(reqs, func(r bench.AuditRequest) bool { return isEventWrite(r) && r.Accepted() })
	t.Logf("%d Ats DONE, the last %s after the last schedule; %.2f events per At", n,
		lastDone.Sub(createStart.Add(firstDue+spreadOver)).Round(time.Millisecond), float64(events)/float64(n))
}

// writesHoldingNothing counts the writes user sent from since on, accepted
// and refused, that the server received while user held no range by hs:
// Events included, its own Leases and writes of unknown outcome (5xx) not.
func writesHoldingNothing(reqs []bench.AuditRequest, hs []holding, user string, since time.Time) (accepted, refused int) {
	holdsAny := func(at time.Time) bool {
		for _, h := range hs {
			if h.user == user && h.contains(at) {
				return true
			}
		}
		return false
	}
	for _, r := range reqs {
		// A write answered 5xx is of unknown outcome (see outOfTurn).
		if r.User != user || !r.Write() || r.Resource == "leases" || r.ServerError() || r.Received.Before(since) || holdsAny(r.Received) {
			continue
		}
		if r.Accepted() {
			accepted++
		} else {
			refused++
		}
	}
	return accepted, refused
}

// leaderTimings are the leader election timings of
// TestAFrozenLeaderWritesNothingAfterItWakes: twice shardTimings. With
// shardTimings' 3 s renew deadline, a CI run on a loaded machine (the API
// server receiving requests seconds after they were sent) cost the new
// leader its Lease too; it exited as controller-runtime does, and no
// replica was left to finish the Ats. Nothing here needs a short lease: the
// test has one freeze and no kill.
var leaderTimings = leaseTimings{duration: 8 * time.Second, renew: 6 * time.Second, retry: time.Second}

// TestAFrozenLeaderWritesNothingAfterItWakes runs the At unsharded, as
// two replicas under leader election (leaderTimings: an 8 s lease), each a
// process and user of its own, on 60 Ats due over 20 s, and freezes the
// leader (SIGSTOP) for twice the lease duration while Ats fall due: the
// standby takes over while it is frozen. Woken (SIGCONT), the old leader
// writes nothing before it exits on the lost lease (shard.Leader's fence
// under controller-runtime's election). From the audit log: every At DONE
// with exactly one Pod, every write to an At or its Pod, accepted or
// refused, received while its writer held the leader Lease, and none at
// all, Events included, from the woken leader.
func TestAFrozenLeaderWritesNothingAfterItWakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the At and starts a control plane of its own")
	}
	t.Parallel()
	const (
		n          = 60
		firstDue   = 5 * time.Second
		spreadOver = 20 * time.Second
		freezeAt   = 10 * time.Second
	)
	lt := leaderTimings
	bins := buildAt(t)
	pl := startPlaneGated(t, false)
	ns := pl.namespace(t, "leader")
	const userPrefix = "leader-"
	tail := pl.tailUsers(t, "the leader and its standby", func(u string) bool { return strings.HasPrefix(u, userPrefix) })
	kl := startKubeletOn(t, pl.admin, ns, podRunTime)
	hist := startStatusHistory(t, pl.admin, ns)
	start := func(name string) *proc {
		return startProc(t, bins, libraryAt, userPrefix+name, procOptions{kubeconfig: pl.user(t, userPrefix+name),
			workers: controller.DefaultWorkers, args: leaseArgs(lt)})
	}
	a := start("a")
	a.waitLeader(t, tail, 2*time.Minute)
	start("b")

	createStart := time.Now()
	ats := make([]*atv1.At, n)
	for i := range ats {
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), createStart.Add(firstDue+spreadOver*time.Duration(i)/time.Duration(n-1)).Truncate(time.Millisecond))
	}
	createPaced(t, pl.admin, ats, 0)
	time.Sleep(time.Until(createStart.Add(freezeAt)))
	frozen, woken := a.freeze(t, 2*lt.duration)
	t.Logf("+%s: the leader %s frozen for %s", frozen.Sub(createStart).Round(time.Millisecond), a.name, woken.Sub(frozen).Round(time.Millisecond))
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		t.Errorf("%s, woken without its lease, did not exit within a minute", a.name)
	}
	lastDone := hist.waitDone(t, n, 3*time.Minute)
	tail.waitQuiet(t, lastDone, quietPeriod, time.Minute)
	reqs := tail.read(t)
	hist.stop()
	kl.stop()

	atItems, podItems := listDone(t, pl, ns, "", n, kl.podsSeen())
	leaderLease := libraryAt.leaseID()
	hs, broken := holdings(reqs, func(name string) bool { return name == leaderLease })
	leaseRules := problems{what: "the leader Lease changed hands as leader election allows", list: broken}
	leaseRules.report(t)
	lost := false
	for _, h := range hs {
		if h.user == a.name && h.contains(frozen) && h.end != endReleased && h.to.Before(woken) {
			lost = true
		}
	}
	if !lost {
		t.Errorf("%s kept the leader Lease through a freeze of twice its duration: the freeze proved nothing", a.name)
	}
	fenced := problems{what: "every write to an At or its Pod, accepted or refused, received while its writer held the leader Lease"}
	writes, _, _ := auditAtWrites(t, reqs, ns, atItems, podItems, outOfTurn(&fenced, hs, func(string) string { return leaderLease }))
	fenced.report(t)
	accepted, refused := writesHoldingNothing(reqs, hs, a.name, woken)
	t.Logf("%s, woken, while it did not lead: %d writes accepted, %d refused, besides its Lease", a.name, accepted, refused)
	if accepted+refused > 0 {
		t.Errorf("%s, woken from a freeze past its lease, wrote %d times while it did not lead", a.name, accepted+refused)
	}
	moved := 0
	for _, w := range writes {
		if len(w.users) > 1 {
			moved++
		}
	}
	t.Logf("%d of %d Ats written by both replicas", moved, n)
}
