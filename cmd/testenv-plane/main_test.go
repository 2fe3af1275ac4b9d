package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/gobuild"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestRunNeedsAPlaneFile: without -o the command refuses to start, saying
// what is missing, before it starts anything.
func TestRunNeedsAPlaneFile(t *testing.T) {
	err := run("", testenv.Options{}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "-o FILE") {
		t.Fatalf("run without -o: err = %v, want one naming -o FILE", err)
	}
}

// TestThePlaneServesUntilStoppedOrOrphaned runs the command as make test
// does and checks both ways it ends: stopped with SIGTERM, and orphaned
// (the shell that started it exits, as an interrupted make does). Either
// way the plane file appears once the plane answers with its kubeconfig,
// and when the command ends the file is gone and the plane answers no
// more.
func TestThePlaneServesUntilStoppedOrOrphaned(t *testing.T) {
	if _, err := testenv.FindAssets(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin, err := gobuild.Executable(t.Context(), t.TempDir(), "github.com/reconcilekit/reconcilekit/cmd/testenv-plane")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// start starts the command writing path, and returns a function
		// that ends it the way the case says.
		start func(t *testing.T, path string) (end func())
	}{
		{"SIGTERM", func(t *testing.T, path string) func() {
			cmd := exec.Command(bin, "-o", path)
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return func() {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("the command, stopped with SIGTERM: %v", err)
				}
			}
		}},
		{"orphaned", func(t *testing.T, path string) func() {
			// The shell starts the command, waits for its plane file,
			// then waits for a line on stdin and exits, leaving it behind.
			sh := exec.Command("sh", "-c", `"$0" -o "$1" & until [ -s "$1" ]; do sleep 0.1; done; read -r line || exit 0`, bin, path)
			stdin, err := sh.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			sh.Stderr = os.Stderr
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
			return func() {
				_ = stdin.Close()
				if err := sh.Wait(); err != nil {
					t.Fatalf("the shell: %v", err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "plane.json")
			end := tt.start(t, path)
			c := waitForPlane(t, path)
			if err := c.List(t.Context(), &corev1.NamespaceList{}); err != nil {
				t.Fatalf("the plane, its file written: %v", err)
			}
			end()
			deadline := time.Now().Add(time.Minute)
			for {
				_, statErr := os.Stat(path)
				listErr := c.List(context.Background(), &corev1.NamespaceList{})
				if errors.Is(statErr, os.ErrNotExist) && listErr != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after the command was ended: plane file %v, the plane answers %v; want both gone", statErr, listErr == nil)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// waitForPlane waits for the plane file at path and returns a client of
// the plane it names.
func waitForPlane(t *testing.T, path string) client.Client {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var p struct {
				Kubeconfig []byte `json:"kubeconfig"`
			}
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatalf("the plane file: %v", err)
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig(p.Kubeconfig)
			if err != nil {
				t.Fatalf("the plane file's kubeconfig: %v", err)
			}
			c, err := client.New(cfg, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("no plane file after two minutes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
