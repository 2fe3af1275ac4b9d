package gobuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecutableComesFromTheBuildCache: the executable of a main package
// is the go build cache's, the same file each time it is asked for with
// the same flags, and another one for other flags; each runs.
func TestExecutableComesFromTheBuildCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command:", err)
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gocache := strings.TrimSpace(string(out))
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nvar greeting = \"hello\"\n\nfunc main() { fmt.Print(greeting) }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(mod)
	// A greeting of the test's own, so that the first request links (no
	// earlier run cached the same executable).
	greeting := filepath.Base(mod)
	ldflags := "-ldflags=-X main.greeting=" + greeting
	run := func(path string) string {
		t.Helper()
		out, err := exec.Command(path).Output()
		if err != nil {
			t.Fatalf("running %s: %v", path, err)
		}
		return string(out)
	}

	first, err := Executable(t.Context(), t.TempDir(), "example.com/hello", ldflags)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, gocache+string(filepath.Separator)) {
		t.Errorf("Executable = %s, want a file of the build cache %s", first, gocache)
	}
	if got := run(first); got != greeting {
		t.Errorf("%s printed %q, want %q", first, got, greeting)
	}
	again, err := Executable(t.Context(), t.TempDir(), "example.com/hello", ldflags)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("asked again: %s, want the same executable %s", again, first)
	}
	other, err := Executable(t.Context(), t.TempDir(), "example.com/hello", "-ldflags=-X main.greeting=other-"+greeting)
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Errorf("other flags gave the same executable %s", first)
	}
	if got := run(other); got != "other-"+greeting {
		t.Errorf("%s printed %q, want %q", other, got, "other-"+greeting)
	}
}

// TestExecutableReportsABuildError: a package that does not compile is an
// error with the compiler's message, not a path.
func TestExecutableReportsABuildError(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command:", err)
	}
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/broken\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { undefinedName() }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(mod)
	path, err := Executable(t.Context(), t.TempDir(), "example.com/broken")
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedName") {
		t.Fatalf("Executable = %q, %v; want the compiler's undefined: undefinedName", path, err)
	}
}
