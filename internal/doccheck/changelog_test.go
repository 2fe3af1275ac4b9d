package doccheck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/internal/release"
)

// ref is a qualified reference to one of our packages' names found in
// CHANGELOG.md: pkg.Name or pkg.Name.Member.
type ref struct {
	pkg, name, member string
}

func (r ref) key() string { // "Name" or "Name.Member", as names.deprecated keys it
	if r.member == "" {
		return r.name
	}
	return r.name + "." + r.member
}

func (r ref) String() string { return r.pkg + "." + r.key() }

func refs(s string) []ref {
	var out []ref
	for _, m := range reference.FindAllStringSubmatch(s, -1) {
		out = append(out, ref{m[1], m[2], m[3]})
	}
	return out
}

// changelogNames reads the repository's CHANGELOG.md; see checkChangelog.
func changelogNames(t *testing.T, apis map[string]names) (gone map[string][]string, log *release.Changelog) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	log, err = release.ParseChangelog(b)
	if err != nil {
		t.Fatal(err)
	}
	gone, _ = checkChangelog(log, apis, func(pkg, name, member string) bool { return apis[pkg].has(name, member) })
	return gone, log
}

// checkChangelog reads what CHANGELOG.md says about names, and returns:
//
//   - gone: for each package, the names the "before" cell of a Changed or
//     Removed row names (in any section) that the package no longer has:
//     renamed, moved or removed. No documentation may use them.
//   - problems: what the current sections (Unreleased and the latest
//     release) get wrong. In them every name given must exist, except a
//     gone one; a name a Removed row gives in its "before" cell must not
//     exist; a name a Deprecated row gives in its "before" cell must exist
//     and say "Deprecated:" in its doc comment, unless a Removed row of a
//     newer section names it (deprecated in the latest release, removed in
//     Unreleased: the release after it, as docs/releasing.md says).
//
// Only package-qualified names count (drift.Ensure, status.Writer.Retry):
// the rows of CHANGELOG.md name everything that way (docs/releasing.md).
func checkChangelog(log *release.Changelog, apis map[string]names, exists func(pkg, name, member string) bool) (gone map[string][]string, problems []string) {
	gone = map[string][]string{}
	wasGone := map[ref]bool{}
	for _, sec := range log.Sections {
		for _, sub := range sec.Subsections {
			if sub.Kind != "Changed" && sub.Kind != "Removed" {
				continue
			}
			for _, row := range sub.Rows {
				for _, r := range refs(row.Cell(0)) {
					if len(r.name) == 1 || apis[r.pkg].has(r.name, r.member) || wasGone[r] {
						continue
					}
					wasGone[r] = true
					gone[r.pkg] = append(gone[r.pkg], r.key())
				}
			}
		}
	}

	current := log.Sections[:1] // Unreleased
	if len(log.Sections) > 1 {
		current = log.Sections[:2] // and the latest release
	}
	for si, sec := range current {
		where := func(line int) string { return fmt.Sprintf("CHANGELOG.md:%d [%s]", line, sec.Title) }
		removedSince := map[ref]bool{} // by a Removed row of a newer section
		for _, newer := range log.Sections[:si] {
			for _, sub := range newer.Subsections {
				if sub.Kind == "Removed" {
					for _, row := range sub.Rows {
						for _, r := range refs(row.Cell(0)) {
							removedSince[r] = true
						}
					}
				}
			}
		}
		kind := ""
		lines := strings.Split(sec.Text, "\n")
		for i, line := range lines {
			n := sec.Line + 1 + i // the text starts below the heading
			if k, ok := strings.CutPrefix(line, "### "); ok {
				kind = strings.TrimSpace(k)
				continue
			}
			var before, rest string
			if row, ok := rowCells(line); ok {
				before, rest = row[0], strings.Join(row[1:], " | ")
			} else {
				rest = line
			}
			if kind != "Removed" && kind != "Deprecated" && kind != "Changed" {
				before, rest = "", before+" | "+rest
			}
			for _, r := range refs(before) {
				has := apis[r.pkg].has(r.name, r.member)
				switch kind {
				case "Removed":
					if has {
						problems = append(problems, fmt.Sprintf("%s: Removed lists %s, which still exists", where(n), r))
					}
				case "Deprecated":
					switch {
					case !has && removedSince[r]:
						// Deprecated then, removed since.
					case !has:
						problems = append(problems, fmt.Sprintf("%s: Deprecated lists %s, which does not exist", where(n), r))
					case !apis[r.pkg].deprecated[r.key()]:
						problems = append(problems, fmt.Sprintf("%s: Deprecated lists %s, whose doc comment has no \"Deprecated:\" paragraph", where(n), r))
					}
				}
				// Changed: a name before a change may be gone or still there.
			}
			for _, r := range refs(rest) {
				if exists(r.pkg, r.name, r.member) || wasGone[r] || len(r.name) == 1 {
					continue
				}
				if r.member != "" && apis[r.pkg].top[r.name] && !isType(apis[r.pkg], r.name) {
					continue // a member of a function's result or a value's type
				}
				problems = append(problems, fmt.Sprintf("%s: names %s, which does not exist", where(n), r))
			}
		}
	}
	return gone, problems
}

// rowCells splits a table row that is neither a header nor a separator.
func rowCells(line string) ([]string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil, false
	}
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if c := strings.TrimSpace(cells[0]); c == "before" || strings.Trim(c, "-: ") == "" {
		return nil, false
	}
	return cells, true
}

// TestChangelogNamesWhatExists fails when CHANGELOG.md's current sections
// (Unreleased and the latest release) name a name that does not exist, list
// as removed a name that still exists, or list as deprecated a name that is
// not marked so.
func TestChangelogNamesWhatExists(t *testing.T) {
	apis, _, exists := loadLibraries(t)
	_, log := changelogNames(t, apis)
	_, problems := checkChangelog(log, apis, exists)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestTheChangelogCheckFindsWrongNames proves the check of CHANGELOG.md is
// not blind: in a sample, each kind of wrong name is found, in the current
// sections only.
func TestTheChangelogCheckFindsWrongNames(t *testing.T) {
	apis, _, exists := loadLibraries(t)
	sample := `# Changelog

## [Unreleased]

### Added

| before | after | migration |
|---|---|---|
| – | ` + "`drift.NoSuchThing`" + ` | new |
| – | ` + "`drift.NewWriter`" + ` | new, and fine |

### Changed

| before | after | migration |
|---|---|---|
| ` + "`drift.GoneForGood(x)`" + ` | ` + "`drift.Renamed(x)`" + ` | rename; ` + "`drift.GoneForGood`" + ` may be named here |

### Deprecated

| before | after | migration |
|---|---|---|
| ` + "`drift.Owner`" + ` | ` + "`compare.Diff`" + ` | not marked deprecated |
| ` + "`drift.NotThere`" + ` | ` + "`compare.Diff`" + ` | does not exist |

### Removed

| before | after | migration |
|---|---|---|
| ` + "`drift.NewWriter`" + ` | – | still exists |
| ` + "`drift.AlsoGone`" + ` | – | right |
| ` + "`drift.DeprecatedThenRemoved`" + ` | – | right |

## [v0.2.0] - 2026-01-02

### Added

- ` + "`drift.MissingInTheLatestRelease`" + `, and ` + "`drift.AlsoGone`" + ` which Unreleased removes

### Deprecated

| before | after | migration |
|---|---|---|
| ` + "`drift.DeprecatedThenRemoved`" + ` | ` + "`drift.NewWriter`" + ` | gone, and Unreleased removes it: right |
| ` + "`drift.DeprecatedAndLost`" + ` | ` + "`drift.NewWriter`" + ` | gone, and no newer section removes it |

## [v0.1.0] - 2026-01-01

### Added

- ` + "`drift.MissingInAnOlderRelease`" + ` is not checked
`
	log, err := release.ParseChangelog([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	gone, problems := checkChangelog(log, apis, exists)
	want := []string{
		"CHANGELOG.md:9 [Unreleased]: names drift.NoSuchThing, which does not exist",
		"CHANGELOG.md:16 [Unreleased]: names drift.Renamed, which does not exist",
		"CHANGELOG.md:22 [Unreleased]: Deprecated lists drift.Owner, whose doc comment has no \"Deprecated:\" paragraph",
		"CHANGELOG.md:23 [Unreleased]: Deprecated lists drift.NotThere, which does not exist",
		"CHANGELOG.md:29 [Unreleased]: Removed lists drift.NewWriter, which still exists",
		"CHANGELOG.md:37 [v0.2.0]: names drift.MissingInTheLatestRelease, which does not exist",
		"CHANGELOG.md:44 [v0.2.0]: Deprecated lists drift.DeprecatedAndLost, which does not exist",
	}
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if want := []string{"GoneForGood", "AlsoGone", "DeprecatedThenRemoved"}; !slices.Equal(gone["drift"], want) {
		t.Errorf("gone names of drift: %v, want %v", gone["drift"], want)
	}
}

// TestReleasesAgree fails when the releases file, CHANGELOG.md's sections
// and the table of docs/releasing.md disagree: every release has its
// section, dated with its commit's day, newest first, and its row in the
// table with its commit and pseudo-version; there is nothing else.
func TestReleasesAgree(t *testing.T) {
	rels, err := release.ReadFile(filepath.Join(root, release.File))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	log, err := release.ParseChangelog(b)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, r := range slices.Backward(rels) {
		want = append(want, r.Version+" - "+r.Date())
	}
	for _, s := range log.Sections[1:] {
		got = append(got, s.Title+" - "+s.Date)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CHANGELOG.md's release sections against %s (-want +got):\n%s", release.File, diff)
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "releasing.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| *\\[?(v\\d+\\.\\d+\\.\\d+)\\]?.*$")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/releasing.md has two rows for %s", m[1])
		}
		rows[m[1]] = m[0]
	}
	for _, r := range rels {
		line, ok := rows[r.Version]
		if !ok {
			t.Errorf("docs/releasing.md's table has no row for %s", r.Version)
			continue
		}
		delete(rows, r.Version)
		for _, field := range []string{r.Commit[:7], r.PseudoVersion(), r.Time.Format("2006-01-02 15:04:05")} {
			if !strings.Contains(line, field) {
				t.Errorf("docs/releasing.md's row for %s lacks %q: %s", r.Version, field, line)
			}
		}
	}
	for v, line := range rows {
		t.Errorf("docs/releasing.md has a row for %s, which %s does not list: %s", v, release.File, line)
	}
}
