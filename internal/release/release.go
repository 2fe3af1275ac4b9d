// Package release reads what the repository records about its releases:
// the releases file (.ci/releases: each version with its commit and time)
// and the sections of CHANGELOG.md. The API-compatibility check
// (internal/cmd/apicompat) and the docs check (internal/doccheck) read them
// through this package, so both agree on what a release and a section are.
//
// docs/releasing.md describes the files for people.
package release

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// File is the releases file's path, relative to the module's root.
const File = ".ci/releases"

// ErrMalformed is returned (wrapped, with the line) for a releases file or
// a CHANGELOG.md that does not follow its format.
var ErrMalformed = errors.New("release: malformed")

// Release is one released version: its tag, the commit the tag names and
// that commit's time (the time a Go pseudo-version of the commit carries).
type Release struct {
	Version string    // "v0.4.0"
	Commit  string    // the full 40-digit commit hash
	Time    time.Time // the commit's committer time, UTC
}

// Date is the release's day, as CHANGELOG.md's heading gives it.
func (r Release) Date() string { return r.Time.UTC().Format(time.DateOnly) }

// PseudoVersion is the pseudo-version `go get` records for the release's
// commit when it is required by hash rather than by tag.
func (r Release) PseudoVersion() string {
	return "v0.0.0-" + r.Time.UTC().Format("20060102150405") + "-" + r.Commit[:12]
}

var (
	semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$`)
	commit = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// ReadFile reads the releases file at path; see [Parse].
func ReadFile(path string) ([]Release, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("release: reading the releases file: %w", err)
	}
	defer f.Close()
	rs, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// Parse reads a releases file: one release a line, oldest first, as
//
//	v0.4.0 28e157dca0b43c97d1c8fa59c87e92fec12274ff 2026-11-25T15:40:55Z
//
// (version, full commit hash, the commit's time in RFC 3339, UTC). Blank
// lines and lines starting with '#' are ignored. Versions must be semantic
// versions in increasing order, and times must not go backwards.
func Parse(r io.Reader) ([]Release, error) {
	var out []Release
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %w: want \"version commit time\", got %q", n, ErrMalformed, line)
		}
		if !semver.MatchString(f[0]) {
			return nil, fmt.Errorf("line %d: %w: version %q is not vMAJOR.MINOR.PATCH", n, ErrMalformed, f[0])
		}
		if !commit.MatchString(f[1]) {
			return nil, fmt.Errorf("line %d: %w: commit %q is not a full 40-digit hash", n, ErrMalformed, f[1])
		}
		t, err := time.Parse(time.RFC3339, f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w: time %q: %w", n, ErrMalformed, f[2], err)
		}
		rel := Release{Version: f[0], Commit: f[1], Time: t.UTC()}
		if len(out) > 0 {
			prev := out[len(out)-1]
			if Compare(prev.Version, rel.Version) >= 0 {
				return nil, fmt.Errorf("line %d: %w: %s does not come after %s", n, ErrMalformed, rel.Version, prev.Version)
			}
			if rel.Time.Before(prev.Time) {
				return nil, fmt.Errorf("line %d: %w: %s is older than %s", n, ErrMalformed, rel.Version, prev.Version)
			}
		}
		out = append(out, rel)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("release: reading the releases file: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no release", ErrMalformed)
	}
	return out, nil
}

// Compare orders two semantic versions of the form vMAJOR.MINOR.PATCH:
// -1, 0 or +1. A version that is not of that form sorts first.
func Compare(a, b string) int {
	pa, pb := parts(a), parts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func parts(v string) [3]int {
	m := semver.FindStringSubmatch(v)
	if m == nil {
		return [3]int{-1, -1, -1}
	}
	var p [3]int
	for i := range p {
		p[i], _ = strconv.Atoi(m[i+1])
	}
	return p
}
