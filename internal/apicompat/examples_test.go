package apicompat

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldExamplesBuildOnlyWithTheOldNamesKept: the release's examples,
// which call a.F, fail against a work tree that renamed F to G, with the
// compiler's message, and build once F is kept as a deprecated alias.
func TestOldExamplesBuildOnlyWithTheOldNamesKept(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitDo := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("a/a.go", "package a\n\n// F is F.\nfunc F() int { return 1 }\n")
	write("examples/use/use.go", "package use\n\nimport \"example.com/m/a\"\n\n// Use uses F.\nfunc Use() int { return a.F() }\n")
	gitDo("init", "-q")
	gitDo("add", "-A")
	gitDo("commit", "-qm", "release")
	rev := gitDo("rev-parse", "HEAD")

	write("a/a.go", "package a\n\n// G is F renamed.\nfunc G() int { return 1 }\n")
	var r Runner
	err := r.OldExamples(t.Context(), dir, rev)
	if err == nil || !strings.Contains(err.Error(), "undefined: a.F") {
		t.Fatalf("OldExamples after F was renamed = %v; want the compiler's undefined: a.F", err)
	}
	write("a/a.go", "package a\n\n// G is F renamed.\nfunc G() int { return 1 }\n\n// F is G.\n//\n// Deprecated: use G.\nfunc F() int { return G() }\n")
	if err := r.OldExamples(t.Context(), dir, rev); err != nil {
		t.Fatalf("OldExamples with F kept: %v", err)
	}
}
