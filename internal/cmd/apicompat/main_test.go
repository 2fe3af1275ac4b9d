package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcilekit/internal/apicompat/apicompattest"
)

// TestRun runs the command as make test does, on the synthetic module whose
// work tree breaks its release: it exits 1 and names each unnamed change;
// with the changes named under Unreleased it exits 0; without the release
// commit it exits 2 and says why; -old lists the changes and checks nothing;
// once the release is v1.0.0 or later, named breaking changes fail too.
func TestRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the release's tree is unpacked there
	r := apicompattest.NewRepo(t)
	tests := []struct {
		name       string
		unreleased string
		oldRev     string
		verbose    bool
		wantCode   int
		want       []string
	}{
		{
			name:     "unnamed breaking changes",
			wantCode: 1,
			want: []string{
				"apicompat: 4 of the 4 incompatible changes since v0.1.0 (" + r.Release.Commit[:7],
				"name `widget.Make` in a row",
				"name `widget.Box.Open` in a row",
				"name `widget.Box.Label` in a row",
				"package example.com/widget/gone: removed",
				"name `gone` in a row",
			},
		},
		{
			name: "every breaking change named",
			unreleased: "### Changed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Make(name)` | `widget.Make(name, size)` | pass a size |\n\n" +
				"### Removed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Box.Open`, `widget.Box.Label`, `gone` | – | |\n",
			verbose:  true,
			wantCode: 0,
			want: []string{
				"Incompatible changes:\n- package example.com/widget/gone: removed\n- widget.(*Box).Open: removed",
				"Compatible changes:\n- package example.com/widget/fresh: added",
				"-> working tree: 4 incompatible changes, each named under [Unreleased] in CHANGELOG.md; 2 compatible",
			},
		},
		{
			name:     "the changes since a release, no check",
			oldRev:   "v0.1.0",
			wantCode: 0,
			want:     []string{"- widget.Make: changed from func(string) string to func(string, int) string", "- widget.Wrap: added"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.WriteChangelog(t, tt.unreleased)
			var out bytes.Buffer
			code, err := run(t.Context(), &out, r.Dir, tt.oldRev, "", tt.verbose)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, tt.wantCode, &out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, &out)
				}
			}
		})
	}

	t.Run("since v1.0.0 a breaking change fails though named", func(t *testing.T) {
		stable := r.Release
		stable.Version = "v1.0.0"
		r.WriteReleases(t, stable)
		defer r.WriteReleases(t, r.Release)
		r.WriteChangelog(t, "### Changed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Make(name)` | `widget.Make(name, size)` | pass a size |\n\n"+
			"### Removed\n\n| before | after | migration |\n|---|---|---|\n| `widget.Box.Open`, `widget.Box.Label`, `gone` | – | |\n")
		var out bytes.Buffer
		code, err := run(t.Context(), &out, r.Dir, "", "", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"4 incompatible changes since v1.0.0", "from v1.0.0 on none may land", "widget.Make: changed from", "package example.com/widget/gone: removed"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("output lacks %q:\n%s", w, &out)
			}
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1\n%s", code, &out)
		}
	})

	t.Run("the release commit missing", func(t *testing.T) {
		missing := r.Release
		missing.Commit = strings.Repeat("0123456789", 4)
		r.WriteReleases(t, missing)
		defer r.WriteReleases(t, r.Release)
		var out bytes.Buffer
		code, err := run(t.Context(), &out, r.Dir, "", "", false)
		if code != 2 || err == nil || !strings.Contains(err.Error(), "is not in this clone's history") || !strings.Contains(err.Error(), "cannot run without it") {
			t.Errorf("run = %d, %v; want 2 and an error that says the release is missing", code, err)
		}
	})
}
