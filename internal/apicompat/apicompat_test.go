package apicompat

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/internal/apicompat/apicompattest"
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
	t.Setenv("TMPDIR", t.TempDir()) // the release's tree is unpacked there
	r := apicompattest.NewRepo(t)
	check := Check{Root: r.Dir}
	res, err := check.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Release != r.Release {
		t.Errorf("compared with %+v, want %+v", res.Release, r.Release)
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
	wantUnnamed := []string{"gone", "widget.Box.Label", "widget.Box.Open", "widget.Make"}
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
			name: "a package named by its import path",
			unreleased: "### Changed\n\n" + table + "| `widget.Make(name)` | `widget.Make(name, size)` | pass a size |\n" +
				"\n### Removed\n\n" + table + "| `widget.Box.Open`, `widget.Box.Label` | – | |\n| `example.com/widget/gone` | – | |\n",
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
			r.WriteChangelog(t, tt.unreleased)
			b, err := os.ReadFile(filepath.Join(r.Dir, "CHANGELOG.md"))
			if err != nil {
				t.Fatal(err)
			}
			log, err := release.ParseChangelog(b)
			if err != nil {
				t.Fatal(err)
			}
			unnamed, err := Unnamed(res.Changes, log)
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
	t.Setenv("TMPDIR", t.TempDir())
	r := apicompattest.NewRepo(t)
	check := Check{Root: r.Dir}

	missing := r.Release
	missing.Commit = strings.Repeat("0123456789", 4)
	r.WriteReleases(t, missing)
	_, err := check.Run(t.Context())
	if !errors.Is(err, ErrNotInHistory) {
		t.Errorf("a release commit not in the repository: err = %v, want ErrNotInHistory", err)
	}

	r.WriteReleases(t, r.Release)
	r.Git(t, "commit", "-q", "--allow-empty", "-m", "after the release")
	r.Git(t, "tag", "-a", "v0.1.0", "-m", "v0.1.0 on the wrong commit")
	_, err = check.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "tag v0.1.0 names commit") {
		t.Errorf("a tag that names another commit: err = %v, want a disagreement", err)
	}
}

func TestMaterialiseRefusesAnUnknownRevision(t *testing.T) {
	r := apicompattest.NewRepo(t)
	err := Materialise(t.Context(), r.Dir, "no-such-revision", t.TempDir())
	if !errors.Is(err, ErrNotInHistory) {
		t.Errorf("Materialise(no-such-revision) = %v, want ErrNotInHistory", err)
	}
	dst := t.TempDir()
	if err := Materialise(t.Context(), r.Dir, r.Release.Commit, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "gone", "gone.go")); err != nil {
		t.Errorf("the release's tree lacks gone/gone.go: %v", err)
	}
	if out := r.Git(t, "status", "--porcelain", "--", "gone"); out != "D gone/gone.go" { // v2 has no gone/: deleted in the work tree, not by Materialise
		t.Errorf("the repository changed: git status says %q", out)
	}
}
