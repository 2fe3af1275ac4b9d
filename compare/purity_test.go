package compare_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheEngineIsAPureFunction keeps the promise of the package: no client,
// no metrics, no global scheme among what it links, and no clock read in its
// code (Diff and Overlay are functions of their arguments).
func TestTheEngineIsAPureFunction(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"sigs.k8s.io/controller-runtime/",    // the client, the manager's metrics
			"github.com/prometheus/",             // metrics
			"k8s.io/client-go/kubernetes/scheme", // the global scheme of built-in kinds
			"github.com/reconcilekit/reconcilekit/drift",
		} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("package compare links %s", dep)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	clock := regexp.MustCompile(`\btime\.(Now|Since|Until)\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := clock.Find(b); m != nil {
			t.Errorf("%s reads the clock: %s", f, m)
		}
	}
}
