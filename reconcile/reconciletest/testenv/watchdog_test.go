package testenv_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/procs"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestAPlaneDoesNotOutliveItsTestProcess runs a test process that dies
// without stopping its package's control plane, as a test that panics or
// runs past -timeout does (testing exits the process; TestMain never gets
// to stop the plane). Its kube-apiserver and etcd, which envtest runs in
// process groups of their own, must not outlive it: they are killed, and
// their directories removed. Before, each such run left a plane running.
func TestAPlaneDoesNotOutliveItsTestProcess(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		t.Skip("already the child process")
	}
	env.Require(t)
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skipf("no /proc to find processes in: %v", err)
	}
	t.Parallel()
	tests := []struct {
		name string
		mode string // what the child does: see TestLeavesItsPlaneBehind
		args []string
	}{
		{"a test panics", "panic", nil},
		{"the run times out", "hang", []string{"-test.timeout=2s"}},
		{"a test panics, its plane envtest's own, attached", "attach", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-test.run=^TestLeavesItsPlaneBehind$", "-test.v"}, tt.args...)
			cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
			cmd.Env = append(os.Environ(), "TESTENV_CHILD="+tt.mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the child process succeeded; want it to die with its plane running:\n%s", out)
			}
			var dirs []string
			for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
				if dir, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "plane dir: "); ok {
					dirs = append(dirs, dir)
				}
			}
			if len(dirs) != 2 {
				t.Fatalf("the child printed %d plane directories, want 2:\n%s", len(dirs), out)
			}
			var left []int
			err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				left = processesWith(dirs)
				return len(left) == 0, nil
			})
			if err != nil {
				t.Errorf("processes %v of the dead test process's plane still run 30 s after it died", left)
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				for _, d := range dirs {
					if _, err := os.Stat(d); err == nil {
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				t.Errorf("the plane's directories %v are still there after the processes ended", dirs)
				for _, d := range dirs {
					_ = os.RemoveAll(d)
				}
			}
		})
	}
}

// TestLeavesItsPlaneBehind is the child of
// TestAPlaneDoesNotOutliveItsTestProcess: it says where a plane keeps its
// files, then panics or hangs past -timeout. The plane is its package's
// (panic, hang), or one it starts with envtest and attaches to (attach),
// as a Ginkgo suite does.
func TestLeavesItsPlaneBehind(t *testing.T) {
	mode := os.Getenv("TESTENV_CHILD")
	if mode != "panic" && mode != "hang" && mode != "attach" {
		t.Skip("run by TestAPlaneDoesNotOutliveItsTestProcess")
	}
	env.Require(t)
	e := &env
	if mode == "attach" {
		te := &envtest.Environment{BinaryAssetsDirectory: env.Assets}
		if _, err := te.Start(); err != nil {
			t.Fatal(err)
		}
		var err error
		if e, err = testenv.Attach(te, testenv.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range testenv.PlaneDirs(e) {
		os.Stdout.WriteString("plane dir: " + d + "\n")
	}
	if mode == "hang" {
		time.Sleep(time.Minute)
	}
	panic("a test that panics")
}

// TestStopDismissesTheWatchdog: a plane stopped by Stop leaves no watchdog
// behind, and one that runs has one.
func TestStopDismissesTheWatchdog(t *testing.T) {
	env.Require(t)
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skipf("no /proc to find processes in: %v", err)
	}
	before := watchdogs(t)
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	running := watchdogs(t)
	if len(running) != len(before)+1 {
		t.Errorf("%d watchdogs with a plane started, %d before; want one more", len(running), len(before))
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if after := watchdogs(t); len(after) != len(before) {
		t.Errorf("%d watchdogs after Stop, %d before; want the plane's dismissed", len(after), len(before))
	}
}

// watchdogs returns this process's watchdog children.
func watchdogs(t *testing.T) []int {
	t.Helper()
	kids, err := procs.Children("sh")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, pid := range processesWith([]string{"testenv-watchdog"}) {
		if _, ok := kids[pid]; ok {
			out = append(out, pid)
		}
	}
	return out
}

// processesWith returns the running processes (any parent) whose command
// line has an argument holding one of the strings.
func processesWith(parts []string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if slices.ContainsFunc(parts, func(p string) bool { return p != "" && strings.Contains(arg, p) }) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
