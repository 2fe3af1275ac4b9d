package testenv

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestTheWatchdogEndsOnlyWhatItGuardsAndOnlyWhenAbandoned runs the
// watchdog over stand-in processes (a shell and its sleep, in a process
// group of their own, as envtest's are) and a directory: dismissed, it
// ends nothing; abandoned (its input closed without a line, as when the
// test process dies), it kills the processes, with their group, and
// removes the directory; a process ID whose process no longer holds the
// expected string on its command line (a reused ID) is left alone.
func TestTheWatchdogEndsOnlyWhatItGuardsAndOnlyWhenAbandoned(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	tests := []struct {
		name       string
		dismissed  bool
		marker     string // "" is the directory, which the process's command line holds
		wantKilled bool
	}{
		{"dismissed", true, "", false},
		{"abandoned", false, "", true},
		{"abandoned, the process ID reused by another process", false, "another-process", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "plane")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// sh stays the group's leader, its sleep a member: killing
			// only sh would leave the sleep. Both hold the write end of
			// out, whose read end sees its end once both are gone
			// (zombies hold no descriptors, where kill(pid, 0) would
			// still find one that nothing has reaped).
			r, out, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			proc := exec.Command("sh", "-c", "sleep 300; :", "stand-in", "--dir="+dir)
			proc.Stdout = out
			proc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			err = proc.Start()
			out.Close()
			if err != nil {
				t.Fatal(err)
			}
			pgid := proc.Process.Pid
			gone := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, r)
				r.Close()
				close(gone)
			}()
			t.Cleanup(func() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				_ = proc.Wait()
				<-gone
			})

			marker := tt.marker
			if marker == "" {
				marker = dir
			}
			w := guard([]target{{pgid, marker}}, []string{dir})
			if w == nil {
				t.Fatal("guard started no watchdog")
			}
			if tt.dismissed {
				err = w.dismiss()
			} else {
				_ = syscall.Close(w.fd) // what the test process's death does
				err = w.cmd.Wait()
			}
			var exit *exec.ExitError
			switch {
			case tt.dismissed && err != nil:
				t.Errorf("dismissed watchdog exited with %v, want 0", err)
			case !tt.dismissed && (!errors.As(err, &exit) || exit.ExitCode() != 3):
				t.Errorf("abandoned watchdog exited with %v, want exit status 3", err)
			}

			// The watchdog has exited: what it killed dies at once.
			limit := time.Second
			if tt.wantKilled {
				limit = 10 * time.Second
			}
			select {
			case <-gone:
				if !tt.wantKilled {
					t.Errorf("the guarded processes were killed")
				}
			case <-time.After(limit):
				if tt.wantKilled {
					t.Errorf("the guarded processes (or the member of their group) still run after the watchdog exited")
				}
			}
			_, statErr := os.Stat(dir)
			if removed := errors.Is(statErr, os.ErrNotExist); removed != !tt.dismissed {
				t.Errorf("directory removed: %v, want %v", removed, !tt.dismissed)
			}
		})
	}
}
