// Package restart restarts, in place, a kube-apiserver that envtest started:
// the same binary, command line, port, certificates and etcd, so that every
// client of it keeps its configuration and only sees what a restart of a
// real control plane shows it: connections dropped, watches ended, and
// watches resumed from an old resourceVersion answered with "too old
// resource version" (the watch cache starts over), after which informers
// list again. It is test plumbing for the repository's own tests.
package restart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reconcilekit/reconcilekit/internal/procs"
)

// APIServer is a kube-apiserver process this test process can stop and
// start again.
type APIServer struct {
	cfg  *rest.Config
	path string
	args []string
	dir  string

	mu sync.Mutex
	// pid is the running process, 0 while stopped.
	pid int
	// own is the process this package started, nil for envtest's own.
	own     *exec.Cmd
	ownDone chan struct{}
}

// Find returns the kube-apiserver child of this process whose command line
// holds arg (such as "--cert-dir=<the plane's>"), reached through cfg.
func Find(cfg *rest.Config, arg string) (*APIServer, error) {
	pid, err := procs.ChildWith("kube-apiserver", arg)
	if err != nil {
		return nil, err
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, err
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return nil, err
	}
	dir, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return nil, err
	}
	return &APIServer{cfg: rest.CopyConfig(cfg), path: exe, args: argv[1:], dir: dir, pid: pid}, nil
}

// Stop stops the API server as a restart does: SIGTERM, and SIGKILL if it
// still runs 2 s later (a kube-apiserver with watches open can take a
// minute to drain them); it returns once the process has exited.
func (a *APIServer) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

func (a *APIServer) stopLocked() error {
	if a.pid == 0 {
		return nil
	}
	p, err := os.FindProcess(a.pid)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling kube-apiserver %d: %w", a.pid, err)
	}
	start := time.Now()
	killed := false
	for alive(a.pid) {
		switch since := time.Since(start); {
		case since > time.Minute:
			return fmt.Errorf("kube-apiserver %d did not exit within a minute of SIGKILL", a.pid)
		case since > 2*time.Second && !killed:
			_ = p.Signal(syscall.SIGKILL)
			killed = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a.own != nil {
		<-a.ownDone
		a.own = nil
	}
	a.pid = 0
	return nil
}

// alive reports whether pid still runs (a zombie does not; envtest reaps
// its own child, this package its own).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Start starts the API server again with the command line it had and waits
// until it serves (/readyz answers ok), at most timeout.
func (a *APIServer) Start(timeout time.Duration, out io.Writer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pid != 0 {
		return errors.New("kube-apiserver is running")
	}
	cmd := exec.Command(a.path, a.args...)
	cmd.Dir = a.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	a.own, a.ownDone, a.pid = cmd, done, cmd.Process.Pid
	cs, err := kubernetes.NewForConfig(a.cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, errors.New("kube-apiserver exited while starting")
		default:
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not get ready again: %w", err)
	}
	return nil
}

// Restart stops the API server, leaves it down for outage, and starts it
// again (see Stop and Start).
func (a *APIServer) Restart(outage time.Duration, out io.Writer) error {
	if err := a.Stop(); err != nil {
		return err
	}
	time.Sleep(outage)
	return a.Start(2*time.Minute, out)
}

// Close stops the API server this package started, if it runs, so that
// the plane can be stopped as envtest started it. Envtest's own process is
// left to envtest.
func (a *APIServer) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.own == nil {
		return nil
	}
	return a.stopLocked()
}
