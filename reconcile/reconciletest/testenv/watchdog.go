package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/reconcilekit/reconcilekit/internal/procs"
)

// watchdogScript waits on its standard input, a pipe whose other end only
// the test process holds. A line on it means the Env stopped its control
// plane: nothing to do. The end of the input without a line means the test
// process died with the plane running (a panicking test, a test timeout,
// an interrupt, os.Exit from a test): it kills the plane's processes, given
// as the first $1 arguments after it, and removes the directories that
// follow them.
const watchdogScript = `if read -r _; then exit 0; fi
n=$1; shift
while [ "$n" -gt 0 ]; do kill -KILL "$1" 2>/dev/null; shift; n=$((n - 1)); done
sleep 1
rm -rf -- "$@"
`

// watchdog is a small shell process that stops a control plane the test
// process left behind. envtest starts kube-apiserver and etcd in process
// groups of their own, so nothing ends them when the test process dies
// without stopping them, and a forgotten plane keeps its CPU, memory and
// ports for good.
type watchdog struct {
	cmd *exec.Cmd
	// fd is the write end of the watchdog's input, a bare descriptor (not
	// an *os.File, whose finalizer would close it when the Env is dropped
	// while its plane is still in use through its Config).
	fd int
}

// guard starts a watchdog over the processes pids and the directories
// dirs. It returns nil when there is nothing to guard or no sh to run it
// with: the Env then works as before, unguarded.
func guard(pids []int, dirs []string) *watchdog {
	if len(pids) == 0 {
		return nil
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil
	}
	var p [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil
	}
	r := os.NewFile(uintptr(p[0]), "testenv-watchdog")
	args := []string{"-c", watchdogScript, "testenv-watchdog", strconv.Itoa(len(pids))}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	cmd := exec.Command(sh, append(args, dirs...)...)
	cmd.Stdin = r
	// Its own process group: an interrupt at the terminal ends the test
	// process, not the watchdog that must clean up after it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		syscall.Close(p[1])
		return nil
	}
	return &watchdog{cmd: cmd, fd: p[1]}
}

// dismiss tells the watchdog that the plane was stopped, and waits for it
// to exit.
func (w *watchdog) dismiss() {
	if w == nil {
		return
	}
	_, _ = syscall.Write(w.fd, []byte("stopped\n"))
	_ = syscall.Close(w.fd)
	_ = w.cmd.Wait()
}

// planeProcesses returns the process IDs of the plane envtest started (its
// kube-apiserver and etcd, found among this process's children by the
// directories on their command lines) and of the components testenv
// started beside it, with the directories they use. Without /proc it finds
// only testenv's own components.
func planeProcesses(certDir, dataDir string, x *components) (pids []int, dirs []string) {
	for _, c := range []struct{ comm, arg, dir string }{
		{"kube-apiserver", "--cert-dir=" + certDir, certDir},
		{"etcd", "--data-dir=" + dataDir, dataDir},
	} {
		if c.dir == "" {
			continue
		}
		if pid, err := procs.ChildWith(c.comm, c.arg); err == nil {
			pids, dirs = append(pids, pid), append(dirs, c.dir)
		}
	}
	if x != nil {
		for _, p := range x.processes {
			pids = append(pids, p.cmd.Process.Pid)
		}
		dirs = append(dirs, x.workDir)
	}
	return pids, dirs
}
