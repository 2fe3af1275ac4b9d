// Package gobuild gives the repository's tests the executables they run as
// processes of their own (the At operator, the benchmark's yardsticks) from
// the go build cache: linked once for as long as the cache keeps them, not
// once per test. It is test plumbing for the repository's own tests.
//
// The go command caches what go run links (since Go 1.24), under a key of
// the package's content and the build flags, as it caches compiled
// packages: a test process, a fresh clone (with -trimpath) or the next run
// of the same code finds the executable there instead of linking it again
// (3-6 s of CPU for the At operator, 0.6 s to look it up).
package gobuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Executable returns the path of the executable the go command builds from
// pkg with flags (build flags such as -race, given before the package), as
// the go build cache holds it: asked for with go run -exec, which names the
// executable instead of running it. The first time, go run links it into a
// directory of its own that it removes as it exits, and caches it: asked
// again, it names the cached one. If the cache does not keep it, Executable
// builds it into dir (go build -o) and returns that path.
//
// The executable is shared: a caller must not change or remove it.
func Executable(ctx context.Context, dir, pkg string, flags ...string) (string, error) {
	for range 2 {
		path, err := goRun(ctx, pkg, flags)
		if err != nil {
			return "", err
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			return path, nil
		}
	}
	path := filepath.Join(dir, filepath.Base(pkg))
	args := append(append([]string{"build", "-o", path}, flags...), pkg)
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return path, nil
}

// goRun asks go run for the path of pkg's executable.
func goRun(ctx context.Context, pkg string, flags []string) (string, error) {
	echo, err := exec.LookPath("echo")
	if err != nil {
		return "", fmt.Errorf("go run -exec needs echo: %w", err)
	}
	args := append(append([]string{"run", "-exec", echo}, flags...), pkg)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	path := strings.TrimSpace(stdout.String())
	if path == "" {
		return "", errors.New("go " + strings.Join(args, " ") + " named no executable")
	}
	return path, nil
}
