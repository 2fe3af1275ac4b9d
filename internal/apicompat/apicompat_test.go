package apicompat

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/internal/release"
)

func TestQualifiedName(t *testing.T) {
	const drift = "github.com/reconcilekit/reconcilekit/drift"
	tests := []struct {
		name, pkg, msg, want string
	}{
		{"function", drift, "Ensure: removed", "drift.Ensure"},
		{"changed signature", drift, "Ensure: changed from func(int) to func(int, string)", "drift.Ensure"},
		{"field", "x/status", "Writer.Retry: removed", "status.Writer.Retry"},
		{"pointer method", "x/status", "(*Writer).Patch: removed", "status.Writer.Patch"},
		{"value method", "x/status", "Writer.String: removed", "status.Writer.String"},
		{"generic receiver", "x/finalizer", "(*Registry[T]).Run: removed", "finalizer.Registry.Run"},
		{"generic type", "x/finalizer", "Func: changed from Func to Func[T client.Object]", "finalizer.Func"},
		{"two type parameters", "x/m", "(*Map[K, V]).Get: removed", "m.Map.Get"},
		{"method set part", "x/status", "Writer.Reset, method set of *Writer: removed", "status.Writer.Reset"},
		{"nested package", "x/reconcile/reconciletest", "Counter.Writes: changed from A to B", "reconciletest.Counter.Writes"},
		{"child package object", "x/reconcile", "./reconciletest.Counter: changed", "reconciletest.Counter"},
		{"another package's object", "x/reconcile", "sigs.k8s.io/controller-runtime/pkg/reconcile.Result: changed", "reconcile.Result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QualifiedName(tt.pkg, tt.msg); got != tt.want {
				t.Errorf("QualifiedName(%q, %q) = %q, want %q", tt.pkg, tt.msg, got, tt.want)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	tests := []struct {
		name, text, want string
		named            bool
	}{
		{"in backticks", "| `drift.Ensure` | – | gone |", "drift.Ensure", true},
		{"with arguments", "`drift.Ensure(ctx, c, obj)`", "drift.Ensure", true},
		{"at the start of a line", "drift.Ensure is gone", "drift.Ensure", true},
		{"a member names its type", "`status.Writer.Retry`", "status.Writer", true},
		{"a longer name", "`drift.EnsureApplied`", "drift.Ensure", false},
		{"another package's name ending alike", "`xdrift.Ensure`", "drift.Ensure", false},
		{"after a dot", "`pkg.drift.Ensure`", "drift.Ensure", false},
		{"the type without the member", "`status.Writer`", "status.Writer.Retry", false},
		{"unqualified", "`Ensure` is gone", "drift.Ensure", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Named(tt.text, tt.want); got != tt.named {
				t.Errorf("Named(%q, %q) = %v, want %v", tt.text, tt.want, got, tt.named)
			}
		})
	}
}

func TestParseReport(t *testing.T) {
	out := "Incompatible changes:\n- Make: changed from func(string) string to func(string, int) string\n- (*Box).Open: removed\nCompatible changes:\n- Wrap: added\n"
	got, err := parseReport("example.com/widget/widget", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Package: "example.com/widget/widget", Name: "widget.Make", Message: "Make: changed from func(string) string to func(string, int) string"},
		{Package: "example.com/widget/widget", Name: "widget.Box.Open", Message: "(*Box).Open: removed"},
		{Package: "example.com/widget/widget", Name: "widget.Wrap", Message: "Wrap: added", Compatible: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseReport (-want +got):\n%s", diff)
	}
	if _, err := parseReport("p", []byte("Incompatible changes:\nsomething else\n")); err == nil {
		t.Error("parseReport accepted a line it does not know")
	}
}

// repo is a git repository in a temporary directory holding the synthetic
// module of testdata: v1 committed (the release), v2 in the work tree.
type repo struct {
	dir     string
	release release.Release
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=apicompat", "-c", "user.email=apicompat@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newRepo(t *testing.T) repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the API check needs git, and there is none on PATH")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	copyTree(t, filepath.Join("testdata", "v1"), dir)
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "v1")
	hash := gitIn(t, dir, "rev-parse", "HEAD")
	ct := gitIn(t, dir, "show", "-s", "--format=%cI", "HEAD")
	when, err := time.Parse(time.RFC3339, ct)
	if err != nil {
		t.Fatal(err)
	}
	rel := release.Release{Version: "v0.1.0", Commit: hash, Time: when.UTC()}
	// The work tree becomes v2: v1's files go, v2's come.
	for _, p := range []string{"widget", "gone", "internal", "cmd", "go.mod"} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join("testdata", "v2"), dir)
	r := repo{dir: dir, release: rel}
	r.writeReleases(t, rel)
	r.writeChangelog(t, "")
	return r
}

func (r repo) writeReleases(t *testing.T, rels ...release.Release) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# version commit time\n")
	for _, rel := range rels {
		b.WriteString(rel.Version + " " + rel.Commit + " " + rel.Time.Format(time.RFC3339) + "\n")
	}
	if err := os.MkdirAll(filepath.Join(r.dir, ".ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, release.File), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeChangelog writes a CHANGELOG.md whose Unreleased section holds
// unreleased (its subsections), above the release's section.
func (r repo) writeChangelog(t *testing.T, unreleased string) {
	t.Helper()
	text := "# Changelog\n\n## [Unreleased]\n\n" + unreleased + "\n## [v0.1.0] - " + r.release.Date() +
		"\n\n### Changed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Make(name)` | `widget.Make(name, size)` | named in the release, not under Unreleased |\n"
	if err := os.WriteFile(filepath.Join(r.dir, "CHANGELOG.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
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

func names(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// TestCheckFailsOnAnUnnamedBreakingChange runs the whole check, apidiff
// included, on the synthetic module: the breaking changes of v2 fail it
// until the Unreleased section names each under Changed or Removed; the
// compatible ones, the internal package and the command never count.
func TestCheckFailsOnAnUnnamedBreakingChange(t *testing.T) {
	r := newRepo(t)
	check := Check{Root: r.dir}
	res, err := check.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Release != r.release {
		t.Errorf("compared with %+v, want %+v", res.Release, r.release)
	}
	var all []string
	for _, c := range res.Changes {
		all = append(all, c.String())
	}
	slices.Sort(all)
	wantAll := []string{
		"package example.com/widget/fresh: added",
		"package example.com/widget/gone: removed",
		"widget.(*Box).Open: removed",
		"widget.Box.Label: removed",
		"widget.Make: changed from func(string) string to func(string, int) string",
		"widget.Wrap: added",
	}
	if diff := cmp.Diff(wantAll, all); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	wantUnnamed := []string{"example.com/widget/gone", "widget.Box.Label", "widget.Box.Open", "widget.Make"}
	if diff := cmp.Diff(wantUnnamed, names(res.Unnamed)); diff != "" {
		t.Errorf("unnamed incompatible changes with an empty Unreleased section (-want +got):\n%s", diff)
	}

	// The same changes against other Unreleased sections: what names them.
	table := "| before | after | migration |\n|---|---|---|\n"
	tests := []struct {
		name, unreleased string
		want             []string
	}{
		{
			name: "every change named under Changed or Removed",
			unreleased: "### Changed\n\n" + table + "| `widget.Make(name)` | `widget.Make(name, size)` | pass a size |\n" +
				"\n### Removed\n\n" + table + "| `widget.Box.Open`, `widget.Box.Label` | – | nothing opens a box |\n| package `gone` | – | use `fresh` |\n",
		},
		{
			name: "named only under Added or Deprecated",
			unreleased: "### Added\n\n" + table + "| – | `widget.Make(name, size)` | new |\n" +
				"\n### Deprecated\n\n" + table + "| `widget.Box.Open` | – | |\n",
			want: wantUnnamed,
		},
		{
			name:       "a type named, not its members",
			unreleased: "### Changed\n\n" + table + "| `widget.Box` | smaller | |\n| `widget.Make` | | |\n| `gone` | | |\n",
			want:       []string{"widget.Box.Label", "widget.Box.Open"},
		},
		{
			name:       "a longer name is not the name",
			unreleased: "### Changed\n\n" + table + "| `widget.MakeAll`, `widget.Box.OpenAll`, `widget.Box.Labels`, `gone/sub` | | |\n",
			want:       wantUnnamed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.writeChangelog(t, tt.unreleased)
			b, err := os.ReadFile(filepath.Join(r.dir, "CHANGELOG.md"))
			if err != nil {
				t.Fatal(err)
			}
			log, err := release.ParseChangelog(b)
			if err != nil {
				t.Fatal(err)
			}
			unnamed, err := Unnamed(res.Changes, log, "example.com/widget")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(unnamed)); diff != "" {
				t.Errorf("unnamed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckFailsWithoutTheRelease proves the check never skips: a release
// commit the clone lacks, or a tag that names another commit, is an error.
func TestCheckFailsWithoutTheRelease(t *testing.T) {
	r := newRepo(t)
	check := Check{Root: r.dir}

	missing := r.release
	missing.Commit = strings.Repeat("0123456789", 4)
	r.writeReleases(t, missing)
	_, err := check.Run(t.Context())
	if !errors.Is(err, ErrNotInHistory) {
		t.Errorf("a release commit not in the repository: err = %v, want ErrNotInHistory", err)
	}

	r.writeReleases(t, r.release)
	gitIn(t, r.dir, "commit", "-q", "--allow-empty", "-m", "after the release")
	gitIn(t, r.dir, "tag", "-a", "v0.1.0", "-m", "v0.1.0 on the wrong commit")
	_, err = check.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "tag v0.1.0 names commit") {
		t.Errorf("a tag that names another commit: err = %v, want a disagreement", err)
	}
}

func TestMaterialiseRefusesAnUnknownRevision(t *testing.T) {
	r := newRepo(t)
	err := Materialise(t.Context(), r.dir, "no-such-revision", t.TempDir())
	if !errors.Is(err, ErrNotInHistory) {
		t.Errorf("Materialise(no-such-revision) = %v, want ErrNotInHistory", err)
	}
	dst := t.TempDir()
	if err := Materialise(t.Context(), r.dir, r.release.Commit, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "gone", "gone.go")); err != nil {
		t.Errorf("the release's tree lacks gone/gone.go: %v", err)
	}
	if out := gitIn(t, r.dir, "status", "--porcelain", "--", "gone"); out != "D gone/gone.go" { // v2 has no gone/: deleted in the work tree, not by Materialise
		t.Errorf("the repository changed: git status says %q", out)
	}
}
