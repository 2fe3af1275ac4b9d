package bench_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/internal/restart"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

var (
	restartN      = flag.Int("at.apirestart.n", 300, "Ats of the API server restart scenario")
	restartSpread = flag.Duration("at.apirestart.spread", 30*time.Second, "how long their schedules span, from firstDue on")
	restartAhead  = flag.Duration("at.apirestart.ahead", 10*time.Second, "how long after their creation the first is due")
	restartOutage = flag.Duration("at.apirestart.outage", 5*time.Second, "how long kube-apiserver stays down at each of the three restarts")
	restartSingle = flag.Bool("at.apirestart.single", false, "run the scenario first on the At as one unsharded replica, the baseline of issue 39")
	keepLogs      = flag.String("at.logs", "", "copy each controller process's log into this directory when its test ends")
)

// TestShardedAtsSurviveAPIServerRestarts is issue 39's scenario: the At
// binary sharded (--shards=6, shardTimings) as three replicas, each a
// process and a user of its own, on -at.apirestart.n Ats created ahead and due
// over -at.apirestart.spread, while kube-apiserver is stopped and started
// again three times (at an eighth, a half and seven eighths of the spread;
// each down for -at.apirestart.outage, longer than the replicas' renew
// deadline, so that each replica also loses its ranges in the process and
// takes them back). Every watch ends, resumes from a resourceVersion the
// new watch cache no longer has, and lists again. Then every At must be
// DONE with exactly one Pod, and from the audit log: one Pod create and
// one finalizer patch per At, at most one status write per phase, each
// write received while its writer held the At's range (holdings rebuilt
// from the Lease writes). The time from the last schedule to the last DONE
// is logged beside the single replica's when -at.apirestart.single runs it
// first (same plane, same Ats, same restarts).
//
// Before the fixes of issue 39, this scenario left Ats RUNNING for good
// with their Pods Succeeded (112, 0 and 195 of 1,000 in three runs).
func TestShardedAtsSurviveAPIServerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the At and restarts a control plane of its own")
	}
	// Its own control plane and processes: it runs beside the smoke and
	// the tests of managers in this process (see parallelTests), not beside
	// the sharded audit proof (see planeMu).
	t.Parallel()
	lockPlane(t)
	bins := buildAt(t)
	// Its kube-apiserver is killed when it has not stopped 2 s after
	// SIGTERM: a write it applied in its last moments may never log its
	// last stage, and is then in the log as received, of unknown outcome.
	pl := startPlaneReceived(t)
	api, err := restart.Find(pl.cfg, "--audit-log-path="+pl.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.Close(); err != nil {
			t.Error(err)
		}
	})
	var single time.Duration
	if *restartSingle {
		single = runRestarts(t, pl, api, bins, false)
	}
	sharded := runRestarts(t, pl, api, bins, true)
	if *restartSingle {
		t.Logf("last schedule to last DONE through 3 restarts: 3 sharded replicas %s, one replica %s (the issue's bound: the single replica's time plus a lease period, %s)",
			sharded.Round(time.Millisecond), single.Round(time.Millisecond), (single + shardTimings.duration).Round(time.Millisecond))
	}
}

// runRestarts runs the scenario on replicas of its own, in a namespace of
// its own, and returns the time from the last schedule to the last DONE.
func runRestarts(t *testing.T, pl *plane, api *restart.APIServer, bins binaries, sharded bool) time.Duration {
	t.Helper()
	n, spread, ahead, outage := *restartN, *restartSpread, *restartAhead, *restartOutage
	what, userPrefix := "one replica", "restart-single-"
	if sharded {
		what, userPrefix = "3 sharded replicas", "restart-sharded-"
	}
	ns := pl.namespace(t, "restart")
	tail := pl.tailUsers(t, what, func(u string) bool { return strings.HasPrefix(u, userPrefix) })
	kl := startKubeletOn(t, pl.admin, ns, podRunTime)
	defer kl.stop()
	hist := startStatusHistory(t, pl.admin, ns)
	defer hist.stop()
	var procs []*proc
	if sharded {
		for _, name := range []string{"a", "b", "c"} {
			procs = append(procs, startReplica(t, pl, bins, userPrefix+name, shardRanges, shardTimings))
		}
		waitBalanced(t, procs, shardRanges, 30*time.Second)
	} else {
		p := startProc(t, bins, libraryAt, userPrefix+"a", procOptions{kubeconfig: pl.user(t, userPrefix+"a"), workers: controller.DefaultWorkers})
		p.waitLeader(t, tail, time.Minute)
		procs = append(procs, p)
	}
	defer func() {
		for _, p := range procs {
			p.stop(t)
		}
	}()

	createStart := time.Now()
	ats := make([]*atv1.At, n)
	for i := range ats {
		due := createStart.Add(ahead + spread*time.Duration(i)/time.Duration(max(n-1, 1))).Truncate(time.Millisecond)
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), due)
	}
	if err := eachPaced(ats, 0, func(at *atv1.At) error { return pl.admin.Create(context.Background(), at) }); err != nil {
		t.Fatalf("creating the Ats: %v", err)
	}
	firstDue := createStart.Add(ahead)
	for k, at := range []time.Duration{spread / 8, spread / 2, spread * 7 / 8} {
		time.Sleep(time.Until(firstDue.Add(at)))
		t.Logf("%s: +%s after the first schedule: restart %d, kube-apiserver down for %s", what, time.Since(firstDue).Round(time.Millisecond), k+1, outage)
		if err := api.Restart(outage, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	lastDue := firstDue.Add(spread)
	lastDone := hist.waitDone(t, n, spread+3*time.Minute)
	tail.waitQuiet(t, lastDone, quietPeriod, time.Minute)
	took := lastDone.Sub(lastDue)
	t.Logf("%s: every At DONE, the last %s after the last schedule", what, took.Round(time.Millisecond))
	hist.mu.Lock()
	late := slices.SortedFunc(maps.Keys(hist.done), func(a, b string) int { return hist.done[b].Compare(hist.done[a]) })
	for _, name := range late[:min(5, len(late))] {
		var at *atv1.At
		for _, a := range ats {
			if a.Name == name {
				at = a
			}
		}
		rng, _ := ranges.Of(at, shardRanges)
		t.Logf("%s: %s (range %d) due +%s, DONE +%s", what, name, rng, at.Spec.Schedule, hist.done[name].Sub(firstDue).Round(time.Millisecond))
	}
	hist.mu.Unlock()
	reqs := tail.read(t)

	// Every At DONE with exactly one Pod.
	atItems, podItems := listDone(t, pl, ns, what+": ", n, nil)

	// Nothing written twice, and (sharded) nothing written unfenced.
	fenced := problems{what: what + ": every write to an At or its Pod received while its writer held the At's range"}
	var check func(bench.AuditRequest, string)
	if sharded {
		hs, broken := holdings(reqs, rangeLeases(shardRanges))
		leaseRules := problems{what: what + ": the range Leases changed hands as leader election allows", list: broken}
		leaseRules.report(t)
		check = outOfTurn(&fenced, hs, rangeLeaseOf(atItems))
	}
	writes, perTarget, unknownOutcome := auditAtWrites(t, reqs, ns, atItems, podItems, check)
	fenced.report(t)
	once := problems{what: what + ": each At: one Pod create, one finalizer patch, at most one status write per phase"}
	for _, at := range atItems {
		// The status watch lists again after each restart and may miss a
		// status: at most PENDING, RUNNING and DONE, each once. A write
		// whose response a restart lost (5xx, or none) may be the one that
		// was applied: at least one accepted or of unknown outcome.
		if wrong := checkAtWrites(writes[at.Name], func(c writeCount) bool { return c.accepted+c.unknown >= 1 && c.accepted <= 3 }); len(wrong) > 0 {
			once.add("%s: %s", at.Name, strings.Join(wrong, "; "))
		}
	}
	once.report(t)
	var per []string
	for _, target := range []string{"create pods", "patch ats", "patch ats/status"} {
		per = append(per, fmt.Sprintf("%s %.2f", target, float64(perTarget[target])/float64(n)))
	}
	t.Logf("%s: accepted writes per At: %s; writes of unknown outcome: %d", what, strings.Join(per, ", "), len(unknownOutcome))
	return took
}
