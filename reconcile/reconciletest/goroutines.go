package reconciletest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// LibraryPackages is the import path prefix of reconcilekit's library
// code: the goroutines [CheckGoroutines] looks for by default are those
// running it. Its examples and its test kit (this package and testenv) are
// not library code.
const LibraryPackages = "github.com/reconcilekit/reconcilekit/"

// goroutineWait is how long, at most, CheckGoroutines waits at the end of
// a test for the goroutines it looks for to end: a manager returns from
// Start once its runnables have, but a goroutine a runnable started may
// take a moment more. The package's own tests shorten it.
var goroutineWait = 10 * time.Second

// checks numbers the calls of CheckGoroutines, to label each test's
// goroutines apart.
var checks atomic.Uint64

// goroutineLabel is the pprof label CheckGoroutines marks a test's
// goroutines with.
const goroutineLabel = "reconciletest.CheckGoroutines"

// CheckGoroutines fails the test if, once it has ended, a goroutine it
// started is still running code of one of packages (import path prefixes;
// none given: [LibraryPackages]): a manager stopped, a Recorder or a
// Member whose context ended, must leave nothing behind. Call it first in
// the test, before anything starts a goroutine: it checks after every
// other cleanup of the test has run (a manager's [testing.TB.Cleanup]
// stop included), waiting up to 10 seconds for them to end, and
// reports each left with its stack.
//
// "Started by the test" means descended from the test's goroutine: every
// goroutine the test starts, and every goroutine those start, carries a
// pprof label CheckGoroutines sets on the test's goroutine (Go passes a
// goroutine's labels to the goroutines it starts). So tests running in
// parallel each check their own; goroutines a package started before the
// test (a shared worker pool, a cache of connections) are not the test's.
// A test that sets pprof labels of its own must set them on a context that
// carries this one.
//
// It looks at goroutines running code of the packages, at any depth of
// their stacks, in files that are not tests: a controller-runtime worker
// stuck in a library call counts, a goroutine of client-go's that the
// library asked for (an informer's) does not. Pass the import path of
// your own module to check your code the same way:
//
//	reconciletest.CheckGoroutines(t, "example.com/my-operator/")
func CheckGoroutines(t testing.TB, packages ...string) {
	t.Helper()
	if len(packages) == 0 {
		packages = []string{LibraryPackages}
	}
	id := strconv.FormatUint(checks.Add(1), 10)
	ctx := pprof.WithLabels(context.Background(), pprof.Labels(goroutineLabel, id))
	pprof.SetGoroutineLabels(ctx)
	t.Cleanup(func() {
		clk := clock.RealClock{}
		deadline := clk.Now().Add(goroutineWait)
		for {
			left := leftGoroutines(id, packages)
			if len(left) == 0 {
				return
			}
			if clk.Now().After(deadline) {
				t.Errorf("reconciletest: %d goroutine(s) of %s still running %s after the test ended:\n\n%s",
					len(left), strings.Join(packages, ", "), goroutineWait, strings.Join(left, "\n\n"))
				return
			}
			clk.Sleep(20 * time.Millisecond)
		}
	})
}

// leftGoroutines returns the stacks of the goroutines labelled id that run
// code of packages, from the goroutine profile (debug=1: one record per
// distinct stack and labels, with a count).
func leftGoroutines(id string, packages []string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return []string{"reading the goroutine profile: " + err.Error()}
	}
	want := fmt.Sprintf("%q:%q", goroutineLabel, id)
	var left []string
	for _, rec := range goroutineRecords(buf.String()) {
		if rec.labels == "" || !strings.Contains(rec.labels, want) {
			continue
		}
		for _, f := range rec.frames {
			if runsCodeOf(f, packages) {
				left = append(left, rec.text)
				break
			}
		}
	}
	return left
}

// goroutineRecord is one record of a debug=1 goroutine profile.
type goroutineRecord struct {
	labels string
	// frames are the stack's lines: "func+0x12 file:line".
	frames []string
	text   string
}

// goroutineRecords splits a debug=1 goroutine profile into its records.
func goroutineRecords(profile string) []goroutineRecord {
	var out []goroutineRecord
	var cur *goroutineRecord
	sc := bufio.NewScanner(strings.NewReader(profile))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			cur = nil
		case strings.HasPrefix(line, "# labels: "):
			if cur != nil {
				cur.labels = strings.TrimPrefix(line, "# labels: ")
			}
		case strings.HasPrefix(line, "#\t"):
			if cur != nil {
				f := strings.Fields(strings.TrimPrefix(line, "#\t"))
				if len(f) >= 3 { // address, function+offset, file:line
					cur.frames = append(cur.frames, f[1]+" "+f[2])
					cur.text += "\n\t" + f[1] + "\t" + f[2]
				}
			}
		case strings.Contains(line, " @ "):
			out = append(out, goroutineRecord{text: strings.SplitN(line, " @ ", 2)[0] + " goroutine(s):"})
			cur = &out[len(out)-1]
		}
	}
	return out
}

// runsCodeOf reports whether a frame ("func+0x12 file:line") runs a
// function of one of packages, in a file that is not a test, outside the
// test kit and the examples.
func runsCodeOf(frame string, packages []string) bool {
	fn, file, _ := strings.Cut(frame, " ")
	file, _, _ = strings.Cut(file, ":")
	if strings.HasSuffix(file, "_test.go") {
		return false
	}
	for _, p := range packages {
		if !strings.HasPrefix(fn, p) {
			continue
		}
		rest := strings.TrimPrefix(fn, LibraryPackages)
		if p == LibraryPackages && (strings.HasPrefix(rest, "examples/") || strings.HasPrefix(rest, "internal/") ||
			strings.HasPrefix(rest, "reconcile/reconciletest.") || strings.HasPrefix(rest, "reconcile/reconciletest/")) {
			return false
		}
		return true
	}
	return false
}
