package bench_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

// shardedReplicas is how many replicas share the Ats in the sharded
// scenario, over shardRanges ranges.
const shardedReplicas = 3

// shardedGoal is issue 25's bound on each replica's peak RSS and cached
// objects over the single replica's, at 3 replicas.
const shardedGoal = 0.45

// defaultTimings are the At's own leader election defaults, which the
// sharded scenario runs with, so that its Lease writes are those of a
// deployment.
var defaultTimings = leaseTimings{duration: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}

// cachedGauge is the metric by which a sharded At says how many objects
// its cache holds (by group and kind: the At's and the Pods').
const cachedGauge = "reconcilekit_shard_cached_objects"

// replicaFigures is what the sharded scenario measured of one process.
type replicaFigures struct {
	name string
	// hwm is the process's VmHWM once every At was DONE, sampledRSS the
	// largest VmRSS sampled every 100 ms.
	hwm, sampledRSS uint64
	// anon is the largest RssAnon sampled every 100 ms: the memory that is
	// the process's own (heap, stacks), without the binary's file pages,
	// which every process of the binary shares in the page cache.
	anon uint64
	// cached is how many objects its cache held once every At was DONE,
	// and cachedFrom where that figure comes from: "gauge" (cachedGauge),
	// "API" (the unsharded replica, which caches every At and every Pod
	// of an At: counted with a list of each), or "" when unknown.
	cached     float64
	cachedFrom string
	// ranges is how many ranges it held (0 unsharded).
	ranges int
	// leaseWrites is its accepted Lease writes per second from the first
	// At created until every At was DONE and the replicas were quiet;
	// writes its other accepted writes.
	leaseWrites float64
	writes      int
}

// shardedRun is one setup of the sharded scenario: one unsharded replica,
// or shardedReplicas replicas over shardRanges ranges.
type shardedRun struct {
	replicas []replicaFigures
	// allDone is from the schedule until the last At was seen DONE;
	// created how long creating the Ats took.
	allDone, created time.Duration
}

// shardedTrial is the sharded scenario: n Ats at one instant, the single
// replica and the sharded replicas measured one after the other on the
// same control plane.
type shardedTrial struct {
	n               int
	single, sharded *shardedRun
}

// shardSeq numbers the sharded scenario's runs, for their users.
var shardSeq atomic.Int64

// measureShardedTrial runs the sharded scenario on pl: n Ats at one
// instant, first on the At as one replica (leader election on, as it
// ships), then on the At with --shards=shardRanges as shardedReplicas
// replicas, each its own process and user.
func measureShardedTrial(tb testing.TB, pl *plane, bins binaries, n int, pace time.Duration) shardedTrial {
	tb.Helper()
	return shardedTrial{n: n,
		single:  measureReplicas(tb, pl, bins, n, pace, 1, 0),
		sharded: measureReplicas(tb, pl, bins, n, pace, shardedReplicas, shardRanges)}
}

// measureReplicas runs replicas processes of the At (over shards ranges,
// or unsharded with leader election when shards is 0) in a fresh namespace
// of pl, creates n Ats due at one instant (instantAhead after the last is
// created), waits until every one is DONE and the replicas are quiet, and
// reads each process's figures; then deletes the Ats (the replicas remove
// their finalizers), stops the replicas and deletes the Pods.
func measureReplicas(tb testing.TB, pl *plane, bins binaries, n int, pace time.Duration, replicas, shards int) *shardedRun {
	tb.Helper()
	ctx := context.Background()
	seq := shardSeq.Add(1)
	prefix := fmt.Sprintf("unsharded-%d-", seq)
	if shards > 0 {
		prefix = fmt.Sprintf("sharded%d-%d-", shards, seq)
	}
	ns := pl.namespace(tb, "shards")
	tail := pl.tailUsers(tb, prefix+"*", func(u string) bool { return strings.HasPrefix(u, prefix) })
	kl := startKubeletOn(tb, pl.admin, ns, podRunTime)
	tr := startTrackerOn(tb, pl.admin, ns)
	defer kl.stop()
	defer tr.stop()
	timeout := 3*time.Minute + time.Duration(n)*100*time.Millisecond

	started := time.Now()
	procs := make([]*proc, replicas)
	for i := range procs {
		user := fmt.Sprintf("%s%d", prefix, i+1)
		if shards > 0 {
			procs[i] = startReplica(tb, pl, bins, user, shards, defaultTimings)
			continue
		}
		procs[i] = startProc(tb, bins, libraryAt, user, procOptions{kubeconfig: pl.user(tb, user), workers: controller.DefaultWorkers})
	}
	if shards > 0 {
		waitBalanced(tb, procs, shards, 2*time.Minute)
	} else {
		procs[0].waitLeader(tb, tail, 2*time.Minute)
	}
	tail.waitQuiet(tb, started, time.Second, time.Minute)

	createStart := time.Now()
	due := createStart.Add(time.Duration(n)*pace + instantAhead).Truncate(time.Millisecond)
	ats := make([]*atv1.At, n)
	for i := range ats {
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), due)
	}
	createPaced(tb, pl.admin, ats, pace)
	r := &shardedRun{created: time.Since(createStart)}
	lastDone := tr.waitDone(tb, n, timeout)
	r.allDone = lastDone.Sub(due)
	tail.waitQuiet(tb, lastDone, quietPeriod, time.Minute)
	lifecycleEnd := time.Now()

	// What the unsharded replica caches: every At, and every Pod an At
	// labelled (controller.CacheByObject), in every namespace.
	var everyAt atv1.AtList
	if err := pl.admin.List(ctx, &everyAt); err != nil {
		tb.Fatal(err)
	}
	var everyPod corev1.PodList
	if err := pl.admin.List(ctx, &everyPod, client.HasLabels{controller.AtUIDLabel}); err != nil {
		tb.Fatal(err)
	}
	reqs := between(tail.read(tb), createStart, lifecycleEnd)
	for _, p := range procs {
		f := replicaFigures{name: p.name}
		f.hwm, f.sampledRSS = p.peak(tb)
		f.anon = p.peakAnon.Load()
		if shards == 0 {
			f.cached, f.cachedFrom = float64(len(everyAt.Items)+len(everyPod.Items)), "API"
		} else if v, samples, err := p.scrape(cachedGauge, map[string]string{"group": "at"}); err == nil && samples > 0 {
			f.cached, f.cachedFrom = v, "gauge"
		}
		if shards > 0 {
			held, err := p.rangesHeld()
			if err != nil {
				tb.Fatal(err)
			}
			f.ranges = held
		}
		f.leaseWrites = leaseWritesPerSecond(reqs, p.name, createStart, lifecycleEnd)
		f.writes = count(reqs, func(q bench.AuditRequest) bool {
			return q.User == p.name && q.Resource != "leases" && q.Write() && q.Accepted()
		})
		r.replicas = append(r.replicas, f)
	}

	// Clean up while the replicas run: they remove their finalizers.
	deleteEach(tb, pl.admin, ats)
	tr.waitGone(tb, timeout)
	for _, p := range procs {
		p.stop(tb)
	}
	kl.stop()
	tr.stop()
	deletePods(ctx, tb, pl, ns)
	return r
}

// ratios is each sharded replica's f over the single replica's; none when
// a figure is unknown (f says so) or the single replica's is 0.
func (t shardedTrial) ratios(f func(replicaFigures) (float64, bool)) []float64 {
	base, ok := f(t.single.replicas[0])
	if !ok || base == 0 {
		return nil
	}
	var out []float64
	for _, r := range t.sharded.replicas {
		v, ok := f(r)
		if !ok {
			return nil
		}
		out = append(out, v/base)
	}
	return out
}

// shardedSection renders the sharded scenario for the report.
func shardedSection(t shardedTrial) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d Ats at one instant, in the same run: the At as it ships, one replica with leader election, against\n"+
		"the At with `--shards=%d` as %d replicas, one after the other on the same control plane. Each replica is\n"+
		"its own process (the At's binary, %d workers) and its own user; the sharded replicas hold their ranges with the\n"+
		"At's default timings (lease %s, renew deadline %s, retry period %s) and the API server runs with\n"+
		"`--feature-gates=%s`. Figures are read once every At is DONE and the replicas are quiet.\n\n",
		t.n, shardRanges, shardedReplicas, controller.DefaultWorkers, defaultTimings.duration, defaultTimings.renew, defaultTimings.retry, shardingGate)
	b.WriteString("| metric | single replica |")
	for i := range t.sharded.replicas {
		fmt.Fprintf(&b, " sharded replica %d |", i+1)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(t.sharded.replicas)) + "\n")
	all := append([]replicaFigures{t.single.replicas[0]}, t.sharded.replicas...)
	row := func(metric string, f func(replicaFigures) string) {
		fmt.Fprintf(&b, "| %s |", metric)
		for _, r := range all {
			fmt.Fprintf(&b, " %s |", f(r))
		}
		b.WriteString("\n")
	}
	row("peak RSS (VmHWM)", func(r replicaFigures) string { return bench.MiB(float64(r.hwm)) })
	row("largest VmRSS sampled every 100 ms", func(r replicaFigures) string { return bench.MiB(float64(r.sampledRSS)) })
	row("largest RssAnon sampled every 100 ms (RSS without the binary's file pages)", func(r replicaFigures) string { return bench.MiB(float64(r.anon)) })
	row("objects in its cache (Ats and their Pods)", func(r replicaFigures) string {
		switch r.cachedFrom {
		case "API":
			return bench.Number(r.cached) + " (every At and Pod, from the API)"
		case "gauge":
			return bench.Number(r.cached)
		}
		return "n/a (no " + cachedGauge + ")"
	})
	row("ranges held", func(r replicaFigures) string {
		if r.ranges == 0 {
			return "–"
		}
		return fmt.Sprint(r.ranges)
	})
	row("Lease writes per second, first At created → all DONE", func(r replicaFigures) string { return bench.Number(r.leaseWrites) })
	row("accepted writes, Leases aside (events included)", func(r replicaFigures) string { return fmt.Sprint(r.writes) })
	fmt.Fprintf(&b, "\nCreating the Ats took %s for the single replica and %s for the sharded ones; schedule → all DONE: %s single, %s sharded.\n\n",
		millis(t.single.created), millis(t.sharded.created), millis(t.single.allDone), millis(t.sharded.allDone))

	b.WriteString("**Each sharded replica ÷ the single replica** (issue 25's goal: at most 0.45× at 3 replicas):\n\n")
	b.WriteString("| metric |")
	for i := range t.sharded.replicas {
		fmt.Fprintf(&b, " replica %d |", i+1)
	}
	b.WriteString(" goal | |\n|---|" + strings.Repeat("---:|", len(t.sharded.replicas)) + "---:|---|\n")
	for _, g := range []struct {
		metric string
		of     func(replicaFigures) (float64, bool)
	}{
		{"peak RSS (VmHWM)", func(r replicaFigures) (float64, bool) { return float64(r.hwm), true }},
		{"objects in its cache", func(r replicaFigures) (float64, bool) { return r.cached, r.cachedFrom != "" }},
		{"largest RssAnon sampled (not a goal of the issue: its own memory, file pages aside)", func(r replicaFigures) (float64, bool) { return float64(r.anon), r.anon > 0 }},
	} {
		ratios := t.ratios(g.of)
		fmt.Fprintf(&b, "| %s |", g.metric)
		met := len(ratios) > 0
		for i := range t.sharded.replicas {
			if i < len(ratios) {
				fmt.Fprintf(&b, " %s |", ratioFormat(ratios[i]))
				met = met && ratios[i] <= shardedGoal
			} else {
				b.WriteString(" n/a |")
			}
		}
		v := verdict(met)
		if len(ratios) == 0 {
			v = "n/a"
		}
		fmt.Fprintf(&b, " ≤ %s× | %s |\n", bench.Number(shardedGoal), v)
	}
	return b.String()
}

// checkShardedTrial checks the counts of a sharded scenario of n Ats (never
// its timings): one single replica caching every At and Pod; the sharded
// replicas each holding its share of the ranges, writing (each did some of
// the work) and renewing Leases; and, where the replicas serve cachedGauge,
// each At and Pod cached by exactly one of them.
func checkShardedTrial(tb testing.TB, st shardedTrial, n int) {
	tb.Helper()
	tb.Logf("sharded scenario:\n%s", shardedSection(st))
	if len(st.single.replicas) != 1 || len(st.sharded.replicas) != shardedReplicas {
		tb.Fatalf("%d single and %d sharded replicas measured, want 1 and %d", len(st.single.replicas), len(st.sharded.replicas), shardedReplicas)
	}
	if s := st.single.replicas[0]; s.cachedFrom != "API" || s.cached != float64(2*n) {
		tb.Errorf("the single replica caches %v objects (from %q), want %d Ats and their Pods from the API", s.cached, s.cachedFrom, n)
	}
	var cached float64
	gauges := 0
	for _, r := range st.sharded.replicas {
		if r.ranges != shardRanges/shardedReplicas || r.writes == 0 || r.leaseWrites == 0 {
			tb.Errorf("%s held %d ranges, made %d writes and %v Lease writes per second; want %d ranges, some of each",
				r.name, r.ranges, r.writes, r.leaseWrites, shardRanges/shardedReplicas)
		}
		if r.cachedFrom == "gauge" {
			cached += r.cached
			gauges++
		}
	}
	switch gauges {
	case 0:
		tb.Logf("the sharded replicas serve no %s: their cached objects are n/a", cachedGauge)
	case shardedReplicas:
		if cached != float64(2*n) {
			tb.Errorf("the sharded replicas cache %v objects between them, want %d: each of the %d Ats and its Pod once", cached, 2*n, n)
		}
	default:
		tb.Errorf("%d of %d sharded replicas serve %s", gauges, shardedReplicas, cachedGauge)
	}
}
