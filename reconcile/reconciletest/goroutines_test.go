package reconciletest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/recorder"
)

// checkTB is a testing.TB whose cleanups and errors CheckGoroutines hands
// it are kept, to run and read them in the test.
type checkTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

func (c *checkTB) Helper()          {}
func (c *checkTB) Cleanup(f func()) { c.cleanups = append(c.cleanups, f) }
func (c *checkTB) Errorf(f string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, strings.TrimSpace(f))
	_ = a
}

func (c *checkTB) end() []string {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	return c.errs
}

// TestCheckGoroutinesFindsAGoroutineOfTheLibraryLeftRunning runs a
// recorder.Recorder, whose Start runs goroutines of the library, under
// CheckGoroutines: left running past the end of the "test", it is
// reported; stopped, nothing is. A goroutine running other code, or
// started by another check, is not reported.
func TestCheckGoroutinesFindsAGoroutineOfTheLibraryLeftRunning(t *testing.T) {
	defer func(w time.Duration) { goroutineWait = w }(goroutineWait)
	goroutineWait = 300 * time.Millisecond
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	start := func() (stop func()) {
		rec := recorder.New(fake.NewClientBuilder().WithScheme(scheme).Build(), "goroutines-test")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rec.Start(ctx); close(done) }()
		return func() { cancel(); <-done }
	}

	leaky := &checkTB{TB: t}
	CheckGoroutines(leaky)
	id := strconv.FormatUint(checks.Load(), 10)
	stop := start()
	// The Recorder's goroutines run library code once scheduled: on a
	// loaded machine, not at once.
	for deadline := time.Now().Add(time.Minute); len(leftGoroutines(id, []string{LibraryPackages})) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Recorder's goroutines never ran library code")
		}
	}
	otherDone := make(chan struct{})
	go func() { <-otherDone }() // not library code
	errs := leaky.end()
	close(otherDone)
	if len(errs) != 1 || !strings.Contains(errs[0], "still running") {
		t.Errorf("a Recorder left running: errors %q, want one saying goroutines are still running", errs)
	}

	// The recorder of the first check still runs: the second check's
	// goroutines are its own.
	clean := &checkTB{TB: t}
	CheckGoroutines(clean)
	stop2 := start()
	stop2()
	if errs := clean.end(); len(errs) != 0 {
		t.Errorf("a Recorder stopped before the end: errors %q, want none", errs)
	}
	stop()
}

// TestGoroutineRecordsReadTheProfile reads a debug=1 goroutine profile:
// labels and frames of each record, and which frames are library code.
func TestGoroutineRecordsReadTheProfile(t *testing.T) {
	profile := "goroutine profile: total 2\n" +
		"1 @ 0x1 0x2\n" +
		"# labels: {\"reconciletest.CheckGoroutines\":\"7\"}\n" +
		"#\t0x1\tgithub.com/reconcilekit/reconcilekit/recorder.(*Recorder).send+0x10\t/src/recorder/send.go:30\n" +
		"#\t0x2\tsync.(*WaitGroup).Go.func1+0x1\t/go/src/sync/waitgroup.go:200\n" +
		"\n" +
		"1 @ 0x3\n" +
		"#\t0x3\tgithub.com/reconcilekit/reconcilekit/recorder_test.TestX+0x1\t/src/recorder/x_test.go:1\n"
	recs := goroutineRecords(profile)
	if len(recs) != 2 || recs[0].labels == "" || recs[1].labels != "" || len(recs[0].frames) != 2 {
		t.Fatalf("records = %+v", recs)
	}
	lib := []string{LibraryPackages}
	for _, c := range []struct {
		frame string
		want  bool
	}{
		{recs[0].frames[0], true},
		{recs[0].frames[1], false},
		{recs[1].frames[0], false}, // a test file
		{"github.com/reconcilekit/reconcilekit/examples/at/internal/controller.(*AtReconciler).sync+0x1 /src/at.go:1", false},
		{"github.com/reconcilekit/reconcilekit/reconcile/reconciletest.Converge+0x1 /src/converge.go:1", false},
		{"github.com/reconcilekit/reconcilekit/reconcile.(*Loop[...]).Reconcile+0x1 /src/loop.go:1", true},
	} {
		if got := runsCodeOf(c.frame, lib); got != c.want {
			t.Errorf("runsCodeOf(%q) = %v, want %v", c.frame, got, c.want)
		}
	}
	if !runsCodeOf("example.com/op/controller.run+0x1 /src/run.go:1", []string{"example.com/op/"}) {
		t.Error("a frame of the package given is not found")
	}
}
