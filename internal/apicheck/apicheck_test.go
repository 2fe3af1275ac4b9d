// Package apicheck holds the tests that keep the library's shape what its
// documentation promises: the dependency weight of each package
// (docs/weight.md), the metrics the packages register (docs/metrics.md), a
// Validate() error on every long-lived value (validate_test.go, docs/api.md),
// the field manager on every write the library sends (fieldowner_test.go,
// README.md "One field owner") and one decoder of managedFields
// (internal/managedfields).
package apicheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"suspend",
	"request",
	"finalizer",
	"ownership",
	"compare",
	"diet",
	"drift",
	"freshness",
	"health",
	"track",
	"applyset",
	"recorder",
	"tracing",
	"shard/ranges",
	"shard",
	"shard/follow",
	"reconcile",
	"reconcile/reconciletest",
	"reconcile/reconciletest/testenv",
}

// TestLibrariesAreEveryPackageUsersImport keeps libraries complete: every
// package of the module outside cmd/, examples/ and any internal/ is in it, so
// that a new package is weighed and its metrics checked from its first
// commit.
func TestLibrariesAreEveryPackageUsersImport(t *testing.T) {
	const module = "github.com/reconcilekit/reconcilekit"
	var got []string
	for _, p := range goList(t, "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "" || strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "examples/") || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") {
			continue
		}
		got = append(got, rel)
	}
	want := slices.Clone(libraries)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("the library packages are %v; libraries lists %v", got, want)
	}
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
