package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCommand builds the real command and runs it the way a user does,
// in cases that must build nothing: a version that cannot be resolved fails
// with exactly one error line and a non-zero exit status, and binaries that
// are already there (KUBEBUILDER_ASSETS or the cache) are printed as they
// are. GOPROXY=off in the cases that must not need the network proves they
// do not.
func TestCommand(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the command with")
	}
	bin := filepath.Join(t.TempDir(), "envtest-assets")
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// fill creates executable stand-ins for the named binaries in a new
	// directory and returns it.
	fill := func(t *testing.T, names ...string) string {
		dir := t.TempDir()
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}

	tests := []struct {
		name string
		// args and env are given the scratch asset directory (-dir) and
		// the test's directories.
		args func(dir string) []string
		env  func(t *testing.T, dir string) map[string]string
		// cached are the binaries placed in the asset directory first.
		cached []string
		// wantOut is the expected stdout; "" means a failure is expected.
		wantOut func(dir string, env map[string]string) string
		// wantErr are substrings of the single error line.
		wantErr []string
	}{
		{
			name:    "malformed kube version",
			args:    func(dir string) []string { return []string{"-dir", dir, "-kube", "1.37"} },
			env:     func(*testing.T, string) map[string]string { return map[string]string{"GOPROXY": "off"} },
			wantErr: []string{`kube version "1.37" is not of the form v1.MINOR.PATCH`},
		},
		{
			name:    "malformed kwok version",
			args:    func(dir string) []string { return []string{"-dir", dir, "-kwok", "main"} },
			env:     func(*testing.T, string) map[string]string { return map[string]string{"GOPROXY": "off"} },
			wantErr: []string{`kwok version "main"`},
		},
		{
			name:    "unknown etcd version",
			args:    func(dir string) []string { return []string{"-dir", dir, "-etcd", "v3.99.0"} },
			wantErr: []string{"cannot download go.etcd.io/etcd/server/v3@v3.99.0", "unknown version, or the module proxy"},
		},
		{
			name: "unknown kube version from the environment",
			args: func(dir string) []string { return []string{"-dir", dir} },
			env: func(*testing.T, string) map[string]string {
				return map[string]string{"RECONCILEKIT_KUBE_VERSION": "v1.99.0"}
			},
			wantErr: []string{"cannot download k8s.io/kubernetes@v1.99.0"},
		},
		{
			name:    "unreachable module proxy",
			args:    func(dir string) []string { return []string{"-dir", dir, "-kube", "v1.36.99"} },
			env:     func(*testing.T, string) map[string]string { return map[string]string{"GOPROXY": "off"} },
			cached:  []string{"etcd"},
			wantErr: []string{"cannot download k8s.io/kubernetes@v1.36.99", "module proxy off is unreachable"},
		},
		{
			name: "KUBEBUILDER_ASSETS holds the binaries",
			args: func(dir string) []string { return []string{"-dir", dir} },
			env: func(t *testing.T, _ string) map[string]string {
				return map[string]string{"GOPROXY": "off", "KUBEBUILDER_ASSETS": fill(t, "kube-apiserver", "etcd")}
			},
			wantOut: func(_ string, env map[string]string) string { return env["KUBEBUILDER_ASSETS"] },
		},
		{
			name: "KUBEBUILDER_ASSETS lacks etcd, the cache has everything",
			args: func(dir string) []string { return []string{"-dir", dir} },
			env: func(t *testing.T, _ string) map[string]string {
				return map[string]string{"GOPROXY": "off", "KUBEBUILDER_ASSETS": fill(t, "kube-apiserver")}
			},
			cached:  []string{"etcd", "kube-apiserver", "kubectl"},
			wantOut: func(dir string, _ map[string]string) string { return dir },
		},
		{
			name: "the cache directory from RECONCILEKIT_ENVTEST_DIR",
			args: func(string) []string { return nil },
			env: func(_ *testing.T, dir string) map[string]string {
				return map[string]string{"GOPROXY": "off", "RECONCILEKIT_ENVTEST_DIR": dir}
			},
			cached:  []string{"etcd", "kube-apiserver", "kubectl"},
			wantOut: func(dir string, _ map[string]string) string { return dir },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// dir is the asset directory the command may use; a failing
			// run must not even create it.
			dir := filepath.Join(t.TempDir(), "assets")
			if len(tt.cached) > 0 {
				if err := os.Rename(fill(t, tt.cached...), dir); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{}
			if tt.env != nil {
				env = tt.env(t, dir)
			}
			before := entries(t, dir)

			stdout, stderr, err := runCommand(t, bin, tt.args(dir), env)

			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if tt.wantOut == nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() == 0 {
					t.Errorf("err = %v, want a non-zero exit status", err)
				}
				if stdout != "" {
					t.Errorf("stdout = %q, want nothing", stdout)
				}
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "envtest-assets: error: ") {
					t.Fatalf("stderr has %d lines, want exactly one error line:\n%s", len(lines), stderr)
				}
				for _, part := range tt.wantErr {
					if !strings.Contains(lines[0], part) {
						t.Errorf("error line lacks %q:\n%s", part, lines[0])
					}
				}
			} else {
				if err != nil {
					t.Fatalf("err = %v, want success; stderr:\n%s", err, stderr)
				}
				if want := tt.wantOut(dir, env) + "\n"; stdout != want {
					t.Errorf("stdout = %q, want %q", stdout, want)
				}
			}
			if after := entries(t, dir); !slices.Equal(before, after) {
				t.Errorf("asset directory changed from %q to %q: something was built", before, after)
			}
		})
	}
}

// runCommand runs bin with args in an environment without the caller's
// KUBEBUILDER_ASSETS and RECONCILEKIT_* settings, and with env added.
func runCommand(t *testing.T, bin string, args []string, env map[string]string) (stdout, stderr string, err error) {
	t.Helper()
	// The bound only stops a broken run from hanging the test; a run that
	// fails as designed ends in seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") || strings.HasPrefix(kv, "RECONCILEKIT_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the command did not finish: %v\n%s", ctx.Err(), errOut.String())
	}
	return out.String(), errOut.String(), err
}

// entries lists dir, or returns nil when it does not exist.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
