package bench_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/bare"
)

// memoryKinds are the controllers issue 38's memory comparison adds to the
// like-for-like ones: the floor, and the At as it was before its diet.
var memoryKinds = []kind{bareAt, libraryNoDietAt}

// memoryGoals are issue 38's bounds.
const (
	// memoryOfHandWritten bounds the library At's peak RSS over the
	// hand-written At's.
	memoryOfHandWritten = 0.5
	// memoryOfFloor bounds the library At's peak RSS over the bare floor's.
	memoryOfFloor = 2.0
)

// memorySection is the report's comparison of what the controllers' caches
// cost (issue 38), for every trial that ran the bare floor: peak RSS, its
// anonymous part, the Go heap in use and CPU of the floor, the hand-written
// At, the library's At caching every object whole and on its diet; then
// the goals. "" when no trial ran it.
func memorySection(cmp comparison) string {
	var b strings.Builder
	hwm := func(r *run) float64 { return float64(r.hwm) }
	kinds := []kind{bareAt, handwrittenAt, libraryNoDietAt, libraryAt}
	figs := []goal{
		{metric: "peak RSS of the process (VmHWM), created → DONE", of: hwm, format: bench.MiB},
		{metric: "largest RssAnon sampled (RSS without the binary's file pages)", of: func(r *run) float64 { return float64(r.anon) }, format: bench.MiB},
		{metric: "Go heap in use once every At is DONE (go_memstats_heap_inuse_bytes)", of: func(r *run) float64 { return float64(r.heapInuse) }, format: bench.MiB},
		{metric: "CPU time of the process, start → all DONE", of: func(r *run) float64 { return r.cpu }, format: seconds},
		{metric: "accepted writes per At, created → DONE (events included)", of: perAt(func(r *run) int { return total(accepted(r.lifecycle)) })},
		{metric: "uncached reads (GET/LIST outside the informers) per At, created → DONE", of: perAt(func(r *run) int { return count(r.lifecycle, isUncachedRead) })},
		{metric: "all DONE after the (last) schedule", of: func(r *run) float64 { return r.allDone.Seconds() }, format: bench.Millis},
	}
	found := false
	for _, t := range cmp.trials {
		if !t.has(bareAt) || !t.has(libraryAt) || !t.has(handwrittenAt) {
			continue
		}
		if !found {
			found = true
			b.WriteString("**What the caches hold.** Four controllers sending the same writes per At: the **bare client-go** floor\n" +
				"([examples/at/bench/bare](examples/at/bench/bare): two watches, a workqueue with its timers, the At and its Pod\n" +
				"read from the API server when it acts on them, no cache of objects), the **hand-written** At on controller-runtime,\n" +
				"the library's At **without the diet** (`--cache-diet=false`: every At and every Pod cached whole, `managedFields`\n" +
				"of every manager included) and as it ships (**reconcilekit**: [package diet](diet) keeps of each object's\n" +
				"`managedFields` the entries the library reads (of an At, none), and of each Pod its metadata, phase and exit\n" +
				"code, stored compact; [docs/memory.md](docs/memory.md)). Both of the library's record their events through\n" +
				"[package recorder](recorder), without client-go's copy of each. Medians of the rounds that ran them, with\n" +
				"their range; ratios per round.\n\n")
			b.WriteString("| scenario | metric | bare client-go | hand-written | reconcilekit without the diet | reconcilekit | reconcilekit ÷ hand-written | reconcilekit ÷ bare | reconcilekit ÷ without the diet |\n" +
				"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		for _, g := range figs {
			fmt.Fprintf(&b, "| %s | %s |", t.sc, g.metric)
			for _, k := range kinds {
				fmt.Fprintf(&b, " %s |", spread(t.values(k, g.of), g.format))
			}
			for _, over := range []kind{handwrittenAt, bareAt, libraryNoDietAt} {
				fmt.Fprintf(&b, " %s |", spread(t.ratios(libraryAt, over, g.of), ratioFormat))
			}
			b.WriteString("\n")
		}
	}
	if !found {
		return ""
	}
	b.WriteString("\n**Goals** (issue 38): the library's At at most 0.5× the hand-written At's peak RSS and at most 2× the bare\n" +
		"floor's, with the same writes per At, and all DONE within the rounds' spread of the hand-written At (its\n" +
		"median at most the hand-written At's slowest round). Writes per At are the same when they are to the hundredth:\n" +
		"both controllers skip the RUNNING status of an At whose Pod finished before they wrote it (about 6 Ats in 100\n" +
		"at 10,000), and how many is a matter of timing; the medians are shown to four places.\n\n")
	b.WriteString("| scenario | goal | measured | limit | |\n|---|---|---:|---:|---|\n")
	for _, t := range cmp.trials {
		if !t.has(bareAt) || !t.has(libraryAt) || !t.has(handwrittenAt) {
			continue
		}
		ratioGoal := func(what string, over kind, limit float64) {
			rs := t.ratios(libraryAt, over, hwm)
			med, _, _ := bench.Spread(rs)
			fmt.Fprintf(&b, "| %s | %s | %s | ≤ %s× | %s |\n", t.sc, what, spread(rs, ratioFormat), bench.Number(limit), verdict(len(rs) > 0 && med <= limit))
		}
		ratioGoal("peak RSS, reconcilekit ÷ hand-written", handwrittenAt, memoryOfHandWritten)
		ratioGoal("peak RSS, reconcilekit ÷ bare client-go", bareAt, memoryOfFloor)
		writes := perAt(func(r *run) int { return total(accepted(r.lifecycle)) })
		rs := t.ratios(libraryAt, handwrittenAt, writes)
		oursW, _, _ := bench.Spread(t.values(libraryAt, writes))
		theirsW, _, _ := bench.Spread(t.values(handwrittenAt, writes))
		fmt.Fprintf(&b, "| %s | accepted writes per At, reconcilekit against hand-written (to the hundredth; ratio %s) | %s | %s | %s |\n",
			t.sc, spread(rs, ratioFormat), strconv.FormatFloat(oursW, 'f', 4, 64), strconv.FormatFloat(theirsW, 'f', 4, 64),
			verdict(len(rs) > 0 && sameWrites(oursW, theirsW)))
		done := func(r *run) float64 { return r.allDone.Seconds() }
		ours, _, _ := bench.Spread(t.values(libraryAt, done))
		_, _, slowest := bench.Spread(t.values(handwrittenAt, done))
		fmt.Fprintf(&b, "| %s | all DONE after the schedule, reconcilekit's median against the hand-written At's slowest round | %s | %s | %s |\n",
			t.sc, bench.Millis(ours), bench.Millis(slowest), verdict(ours <= slowest))
	}
	return b.String()
}

// startBare runs the bare client-go At controller on namespace ns of the
// package's control plane, in this process, until the test ends or its
// stop is called.
func startBare(tb testing.TB, ns string) *running {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := &bare.Controller{Config: env.Config, Namespace: ns}
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	r := &running{}
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("the bare controller: %v", err)
			}
		})
	}
	tb.Cleanup(r.stop)
	return r
}

// TestTheBareAtRecordsWhatTheLibraryAtRecords runs the bare client-go At
// and the library's At on the same six Ats as
// TestTheHandWrittenAtRecordsWhatTheLibraryAtRecords and finds the same
// record on each: the memory comparison's floor does all the work the
// library's At does.
func TestTheBareAtRecordsWhatTheLibraryAtRecords(t *testing.T) {
	env.Require(t)
	lockManagers(t)
	got := map[kind]map[string]record{}
	for _, k := range []kind{bareAt, libraryAt} {
		got[k] = recordOf(t, k)
	}
	if diff := cmp.Diff(got[libraryAt], got[bareAt]); diff != "" {
		t.Errorf("the bare At records otherwise than the library's (-library +bare):\n%s", diff)
	}
}

// TestTheBareAtImportsNothingOfTheLibrary: the floor is client-go's; of
// reconcilekit it links the At's API types and what the yardsticks record
// (atrecord, the At's API and apimachinery: its own imports are checked
// here too), and of controller-runtime only the scheme builder they use.
func TestTheBareAtImportsNothingOfTheLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", barePackage).Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1":            true,
		"github.com/reconcilekit/reconcilekit/examples/at/bench/bare":              true,
		"github.com/reconcilekit/reconcilekit/examples/at/bench/bare/cmd/bare":     true,
		"github.com/reconcilekit/reconcilekit/examples/at/bench/internal/atrecord": true,
		"sigs.k8s.io/controller-runtime/pkg/scheme":                                true,
	}
	for _, p := range strings.Fields(string(out)) {
		if (strings.HasPrefix(p, "github.com/reconcilekit/") || strings.HasPrefix(p, "sigs.k8s.io/controller-runtime")) && !allowed[p] {
			t.Errorf("the bare At links %s", p)
		}
	}
}

// sameWrites reports whether ours writes per At are at most theirs, to the
// hundredth of a write.
func sameWrites(ours, theirs float64) bool {
	return math.Round(ours*100) <= math.Round(theirs*100)
}

// TestSameWritesComparesToTheHundredth: writes per At that round to the
// same hundredth are the same; one more hundredth is not.
func TestSameWritesComparesToTheHundredth(t *testing.T) {
	for _, tt := range []struct {
		ours, theirs float64
		want         bool
	}{
		{5.9312, 5.9298, true},
		{5.9298, 5.9312, true},
		{5.9351, 5.9349, false},
		{5.92, 5.94, true},
		{6, 5.94, false},
		{0, 0, true},
	} {
		if got := sameWrites(tt.ours, tt.theirs); got != tt.want {
			t.Errorf("sameWrites(%v, %v) = %v, want %v", tt.ours, tt.theirs, got, tt.want)
		}
	}
}
