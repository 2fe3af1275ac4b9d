package release

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	hashA = "762d70f7a29afa267b80e80f5f5903f7052a146b"
	hashB = "480b8760c384258cb348b9b3f90ce01d785d65bc"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // "version commit time"
		wantErr string
	}{
		{
			name: "two releases with comments",
			in:   "# header\n\nv0.1.0 " + hashA + " 2026-11-22T02:10:07Z\nv0.2.0 " + hashB + " 2026-11-22T20:33:40Z\n",
			want: []string{"v0.1.0 " + hashA + " 2026-11-22T02:10:07Z", "v0.2.0 " + hashB + " 2026-11-22T20:33:40Z"},
		},
		{
			name: "a time with an offset is read as UTC",
			in:   "v1.2.3 " + hashA + " 2026-11-22T03:10:07+01:00\n",
			want: []string{"v1.2.3 " + hashA + " 2026-11-22T02:10:07Z"},
		},
		{name: "empty", in: "# nothing\n", wantErr: "no release"},
		{name: "two fields", in: "v0.1.0 " + hashA + "\n", wantErr: `line 1: release: malformed: want "version commit time"`},
		{name: "not a semantic version", in: "0.1.0 " + hashA + " 2026-11-22T02:10:07Z\n", wantErr: `version "0.1.0"`},
		{name: "a prerelease", in: "v0.1.0-rc.1 " + hashA + " 2026-11-22T02:10:07Z\n", wantErr: `version "v0.1.0-rc.1"`},
		{name: "a short hash", in: "v0.1.0 762d70f 2026-11-22T02:10:07Z\n", wantErr: `commit "762d70f" is not a full 40-digit hash`},
		{name: "a date without a time", in: "v0.1.0 " + hashA + " 2026-11-22\n", wantErr: `time "2026-11-22"`},
		{
			name:    "versions out of order",
			in:      "v0.2.0 " + hashB + " 2026-11-22T20:33:40Z\nv0.1.0 " + hashA + " 2026-11-22T21:10:07Z\n",
			wantErr: "line 2: release: malformed: v0.1.0 does not come after v0.2.0",
		},
		{
			name:    "v0.10.0 after v0.9.0 is in order, time backwards is not",
			in:      "v0.9.0 " + hashB + " 2026-11-22T20:33:40Z\nv0.10.0 " + hashA + " 2026-11-22T02:10:07Z\n",
			wantErr: "line 2: release: malformed: v0.10.0 is older than v0.9.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Parse(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse error = %v, want ErrMalformed containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.Version+" "+r.Commit+" "+r.Time.Format(time.RFC3339))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleaseDateAndPseudoVersion(t *testing.T) {
	r := Release{Version: "v0.4.0", Commit: "28e157dca0b43c97d1c8fa59c87e92fec12274ff", Time: time.Date(2026, 11, 25, 15, 40, 55, 0, time.UTC)}
	if got, want := r.PseudoVersion(), "v0.0.0-20261125154055-28e157dca0b4"; got != want {
		t.Errorf("PseudoVersion() = %q, want %q", got, want)
	}
	if got, want := r.Date(), "2026-11-25"; got != want {
		t.Errorf("Date() = %q, want %q", got, want)
	}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"v0.1.0", "v0.2.0", -1},
		{"v0.10.0", "v0.9.0", 1},
		{"v1.0.0", "v0.99.99", 1},
		{"v0.4.1", "v0.4.1", 0},
		{"junk", "v0.0.0", -1},
	}
	for _, tt := range tests {
		if got := Compare(tt.a, tt.b); got != tt.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestTheRepositorysReleasesFile reads the real file: it must parse.
func TestTheRepositorysReleasesFile(t *testing.T) {
	rs, err := ReadFile(filepath.Join("..", "..", File))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d releases, the last %s at %s", len(rs), rs[len(rs)-1].Version, rs[len(rs)-1].Commit)
}

const sampleChangelog = "# Changelog\n\nIntro `## [not a heading]` in prose.\n\n" +
	"## [Unreleased]\n\n### Added\n\n| before | after | migration |\n|---|---|---|\n| – | `drift.New` | new |\n\n- a bullet\n\n" +
	"### Removed\n\n| before | after | migration |\n|---|---|---|\n\n" +
	"## [v0.2.0] - 2026-11-22\n\nProse.\n\n### Changed\n\n| before | after | migration |\n| --- | --- | --- |\n| `a.B` | `a.C` | rename |\n| `a.D` | `a.E` |\n\n" +
	"#### A migration guide\n\n```\n## [not a section]\n### Nor a subsection\n| nor | a row |\n```\n\n" +
	"## [v0.1.0] - 2026-11-21\n\n### Added\n\n- first\n"

func TestParseChangelog(t *testing.T) {
	c, err := ParseChangelog([]byte(sampleChangelog))
	if err != nil {
		t.Fatal(err)
	}
	type sub struct {
		Kind string
		Line int
		Rows [][]string
	}
	type sec struct {
		Title, Date string
		Line        int
		Subs        []sub
	}
	var got []sec
	for _, s := range c.Sections {
		g := sec{Title: s.Title, Date: s.Date, Line: s.Line}
		for _, ss := range s.Subsections {
			var rows [][]string
			for _, r := range ss.Rows {
				rows = append(rows, append([]string{fmt.Sprint(r.Line)}, r.Cells...))
			}
			g.Subs = append(g.Subs, sub{ss.Kind, ss.Line, rows})
		}
		got = append(got, g)
	}
	want := []sec{
		{Title: "Unreleased", Line: 5, Subs: []sub{
			{"Added", 7, [][]string{{"11", "–", "`drift.New`", "new"}}},
			{"Removed", 15, nil},
		}},
		{Title: "v0.2.0", Date: "2026-11-22", Line: 20, Subs: []sub{
			{"Changed", 24, [][]string{{"28", "`a.B`", "`a.C`", "rename"}, {"29", "`a.D`", "`a.E`"}}},
		}},
		{Title: "v0.1.0", Date: "2026-11-21", Line: 39, Subs: []sub{{"Added", 41, nil}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseChangelog (-want +got):\n%s", diff)
	}
	s, ok := c.Section("v0.2.0")
	if !ok || !strings.Contains(s.Subsection("Changed").Text, "## [not a section]") || s.Subsection("Added") != nil {
		t.Errorf("v0.2.0's Changed text does not hold its code block, or it has an Added: %+v", s)
	}
	if got := s.Subsections[0].Rows[1].Cell(2); got != "" {
		t.Errorf("a missing cell is %q, want empty", got)
	}
}

func TestParseChangelogRefusesAnotherForm(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"no Unreleased first", "# C\n\n## [v0.1.0] - 2026-11-21\n", "the first section is not"},
		{"an old-style heading", "# C\n\n## Unreleased: the API before v1\n", `got "## Unreleased: the API before v1"`},
		{"a release without a date", "## [Unreleased]\n\n## [v0.1.0]\n", `got "## [v0.1.0]"`},
		{"a dated Unreleased", "## [Unreleased] - 2026-11-21\n", `got "## [Unreleased] - 2026-11-21"`},
		{"a package as a subsection", "## [Unreleased]\n\n### drift\n", `subsection "drift" is none of Added, Changed`},
		{"a subsection twice", "## [Unreleased]\n\n### Added\n\n### Added\n", `a second "Added" in [Unreleased]`},
		{"a subsection before any section", "# C\n\n### Added\n", "before any"},
		{"oldest first", "## [Unreleased]\n\n## [v0.1.0] - 2026-11-21\n\n## [v0.2.0] - 2026-11-22\n", "v0.2.0 comes after v0.1.0: newest first"},
		{"Unreleased twice", "## [Unreleased]\n\n## [Unreleased]\n", "a second Unreleased"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseChangelog([]byte(tt.in))
			if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseChangelog error = %v, want ErrMalformed containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzParseChangelog: any input is parsed or refused with ErrMalformed,
// never a panic; what parses starts with Unreleased, has each kind once
// per section, and rows on lines inside their subsection.
func FuzzParseChangelog(f *testing.F) {
	f.Add(sampleChangelog)
	f.Add("## [Unreleased]\n### Fixed\n|x|\n")
	f.Add("## [Unreleased]\n```\n### junk\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseChangelog([]byte(in))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if c.Sections[0].Title != Unreleased {
			t.Fatalf("first section %q", c.Sections[0].Title)
		}
		for _, s := range c.Sections {
			seen := map[string]bool{}
			for _, ss := range s.Subsections {
				if seen[ss.Kind] {
					t.Fatalf("%s twice in %s", ss.Kind, s.Title)
				}
				seen[ss.Kind] = true
				for _, r := range ss.Rows {
					if r.Line <= ss.Line || len(r.Cells) == 0 {
						t.Fatalf("row %+v of %s at line %d", r, ss.Kind, ss.Line)
					}
				}
			}
		}
	})
}

// FuzzParse: any releases file is parsed or refused with ErrMalformed;
// what parses is in increasing version order with full hashes.
func FuzzParse(f *testing.F) {
	f.Add("v0.1.0 " + hashA + " 2026-11-22T02:10:07Z\nv0.2.0 " + hashB + " 2026-11-22T20:33:40Z\n")
	f.Add("# c\nv1.0.0 " + hashA + " 2026-11-22T02:10:07+05:00\n")
	f.Fuzz(func(t *testing.T, in string) {
		rs, err := Parse(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !strings.Contains(err.Error(), "reading the releases file") {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		for i, r := range rs {
			if len(r.Commit) != 40 || r.PseudoVersion() == "" {
				t.Fatalf("release %+v", r)
			}
			if i > 0 && Compare(rs[i-1].Version, r.Version) >= 0 {
				t.Fatalf("%s before %s", rs[i-1].Version, r.Version)
			}
		}
	})
}
