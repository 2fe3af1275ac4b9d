// Package apicompattest builds, for the tests of the API check, a git
// repository holding a tiny synthetic module: its v1 committed and recorded
// as release v0.1.0, its v2 in the work tree. v2 breaks v1 on purpose:
//
//   - widget.Make takes a second argument (a changed signature),
//   - widget.Box loses its field Label and its method Open,
//   - package gone is removed,
//
// and changes it compatibly (widget.Wrap and package fresh are new), while
// its internal package and its command change without counting.
package apicompattest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcilekit/internal/release"
)

// Module is the synthetic module's path.
const Module = "example.com/widget"

// Repo is the repository: Dir is its work tree (v2), Release the release
// its releases file records (v1's commit).
type Repo struct {
	Dir     string
	Release release.Release
}

// NewRepo builds the repository in a temporary directory of t, with a
// releases file naming v1's commit and a CHANGELOG.md whose Unreleased
// section is empty.
func NewRepo(t testing.TB) Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the API check needs git, and there is none on PATH")
	}
	testdata := filepath.Join(moduleRoot(t), "internal", "apicompat", "apicompattest", "testdata")
	dir := t.TempDir()
	r := Repo{Dir: dir}
	r.Git(t, "init", "-q")
	copyTree(t, filepath.Join(testdata, "v1"), dir)
	r.Git(t, "add", "-A")
	r.Git(t, "commit", "-q", "-m", "v1")
	when, err := time.Parse(time.RFC3339, r.Git(t, "show", "-s", "--format=%cI", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	r.Release = release.Release{Version: "v0.1.0", Commit: r.Git(t, "rev-parse", "HEAD"), Time: when.UTC()}
	// The work tree becomes v2: v1's files go, v2's come.
	for _, p := range []string{"widget", "gone", "internal", "cmd", "go.mod"} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join(testdata, "v2"), dir)
	r.WriteReleases(t, r.Release)
	r.WriteChangelog(t, "")
	return r
}

// Git runs git in the repository, with no user or system configuration,
// and returns its output, trimmed.
func (r Repo) Git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir, "-c", "user.name=apicompattest", "-c", "user.email=apicompattest@example.com",
		"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// WriteReleases writes the releases file.
func (r Repo) WriteReleases(t testing.TB, rels ...release.Release) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# version commit time\n")
	for _, rel := range rels {
		b.WriteString(rel.Version + " " + rel.Commit + " " + rel.Time.Format(time.RFC3339) + "\n")
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, filepath.Dir(release.File)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, release.File), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteChangelog writes a CHANGELOG.md whose Unreleased section holds
// unreleased (its subsections), above the release's section, which names
// widget.Make: a name under a release does not count.
func (r Repo) WriteChangelog(t testing.TB, unreleased string) {
	t.Helper()
	text := "# Changelog\n\n## [Unreleased]\n\n" + unreleased + "\n## [v0.1.0] - " + r.Release.Date() +
		"\n\n### Changed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Make(name)` | `widget.Make(name, size)` | named in the release, not under Unreleased |\n"
	if err := os.WriteFile(filepath.Join(r.Dir, "CHANGELOG.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleRoot is the nearest directory holding a go.mod, from the working
// directory up: the repository's root, for a test of a package in it (go
// test runs a test in its package's directory). Not the source file's
// directory: make test builds with -trimpath, which hides it.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("apicompattest: no go.mod above %s, to find its testdata", dir)
		}
	}
}
