// Package apicheck holds the tests that keep the library's shape what its
// documentation promises: the dependency weight of each package
// (docs/weight.md) and the metrics the packages register
// (docs/metrics.md).
package apicheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's root, relative to this package.
const root = "../.."

// module is the module's import path.
const module = "github.com/reconcilekit/reconcilekit"

// libraries are the packages users import, by their directory under the
// module root, in the order of the import table of the design.
var libraries = []string{
	"errors",
	"requeue",
	"status",
	"finalizer",
	"ownership",
	"drift",
	"freshness",
	"shard",
	"reconcile",
	"reconcile/reconciletest",
	"reconcile/reconciletest/testenv",
}

// goList runs go list in the module root for linux/amd64, so that the
// answer does not depend on the machine running the test, and returns its
// output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// readDoc returns the text of a file under the module root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
