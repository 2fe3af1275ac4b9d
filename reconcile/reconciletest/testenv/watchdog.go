package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/reconcilekit/reconcilekit/internal/procs"
)

// watchdogScript waits on its standard input, a pipe whose other end only
// the test process holds. A line on it means the Env stopped its control
// plane: it exits 0. The end of the input without a line means the test
// process died with the plane running (a panicking test, a test timeout,
// an interrupt, os.Exit from a test): it kills the plane's processes,
// given as $1 pairs of a process ID and a string on that process's command
// line (so that a process ID since reused by another process is left
// alone), each with its process group; removes the directories that follow
// them; and exits 3.
const watchdogScript = `if read -r _; then exit 0; fi
runs() {
	if [ -r "/proc/$1/cmdline" ]; then c=$(cat "/proc/$1/cmdline" 2>/dev/null)
	else c=$(ps -o command= -p "$1" 2>/dev/null); fi
	case "$c" in *"$2"*) return 0 ;; esac
	return 1
}
n=$1; shift
while [ "$n" -gt 0 ]; do
	if runs "$1" "$2"; then kill -KILL "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null; fi
	shift 2; n=$((n - 1))
done
sleep 1
rm -rf -- "$@"
exit 3
`

// target is a process the watchdog ends: its ID, and a string its command
// line holds.
type target struct {
	pid    int
	marker string
}

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
	// once: copies of an Env share the watchdog, and the descriptor must
	// be written and closed once (its number may be reused after).
	once sync.Once
	exit error
}

// guard starts a watchdog over the processes targets and the directories
// dirs. It returns nil when there is nothing to guard or no sh to run it
// with: the Env then works as before, unguarded.
func guard(targets []target, dirs []string) *watchdog {
	if len(targets) == 0 {
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
	args := []string{"-c", watchdogScript, "testenv-watchdog", strconv.Itoa(len(targets))}
	for _, t := range targets {
		args = append(args, strconv.Itoa(t.pid), t.marker)
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
// to exit; it returns how it exited (nil: dismissed, nothing killed).
func (w *watchdog) dismiss() error {
	if w == nil {
		return nil
	}
	w.once.Do(func() {
		_, _ = syscall.Write(w.fd, []byte("stopped\n"))
		_ = syscall.Close(w.fd)
		w.exit = w.cmd.Wait()
	})
	return w.exit
}

// planeProcesses returns the processes of the plane envtest started (its
// kube-apiserver and etcd, found among this process's children by the
// directories on their command lines) and of the components testenv
// started beside it, with the directories they use. Without /proc it finds
// only testenv's own components.
func planeProcesses(certDir, dataDir string, x *components) (targets []target, dirs []string) {
	for _, c := range []struct{ comm, arg, dir string }{
		{"kube-apiserver", "--cert-dir=" + certDir, certDir},
		{"etcd", "--data-dir=" + dataDir, dataDir},
	} {
		if c.dir == "" {
			continue
		}
		if pid, err := procs.ChildWith(c.comm, c.arg); err == nil {
			targets, dirs = append(targets, target{pid, c.dir}), append(dirs, c.dir)
		}
	}
	if x != nil {
		// Their command lines name their kubeconfigs, in workDir.
		for _, p := range x.processes {
			targets = append(targets, target{p.cmd.Process.Pid, x.workDir})
		}
		dirs = append(dirs, x.workDir)
	}
	return targets, dirs
}
