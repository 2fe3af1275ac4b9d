package release

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Unreleased is the title of CHANGELOG.md's first section, the changes
// made since the last release.
const Unreleased = "Unreleased"

// Kinds are the subsections a section of CHANGELOG.md may have, in the
// order Keep a Changelog gives them.
var Kinds = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

// Changelog is CHANGELOG.md read into its sections.
type Changelog struct {
	Sections []Section // in the order of the file: Unreleased, then the newest release first
}

// Section is one "## " section: the Unreleased changes or one release's.
type Section struct {
	Title       string // "Unreleased" or a version, "v0.4.0"
	Date        string // "2026-11-25"; empty for Unreleased
	Line        int    // the heading's line, counted from 1
	Text        string // everything under the heading up to the next section
	Subsections []Subsection
}

// Subsection is one "### " part of a section: Added, Changed, Deprecated,
// Removed, Fixed or Security.
type Subsection struct {
	Kind string
	Line int
	Text string // everything under the heading up to the next "###" or "##"
	Rows []Row  // the rows of its tables, without header and separator lines
}

// Row is a row of a table, `| before | after | migration |`.
type Row struct {
	Line  int
	Cells []string // trimmed
}

// Cell returns the row's i-th cell, or "" when it has fewer.
func (r Row) Cell(i int) string {
	if i < len(r.Cells) {
		return r.Cells[i]
	}
	return ""
}

var heading = regexp.MustCompile(`^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$`)

// ParseChangelog reads CHANGELOG.md: a title and introduction, then
// "## [Unreleased]" and "## [vX.Y.Z] - YYYY-MM-DD" sections, each made of
// "### Kind" subsections (see [Kinds]) holding tables and prose. A "##" or
// "###" heading of another form is an error: the checks would read past it.
// Deeper headings ("####") belong to the subsection they are in.
func ParseChangelog(b []byte) (*Changelog, error) {
	c := &Changelog{}
	var sec *Section
	var sub *Subsection
	var text, subText strings.Builder
	flushSub := func() {
		if sub != nil {
			sub.Text = subText.String()
			sec.Subsections = append(sec.Subsections, *sub)
			sub = nil
			subText.Reset()
		}
	}
	flush := func() {
		flushSub()
		if sec != nil {
			sec.Text = text.String()
			c.Sections = append(c.Sections, *sec)
			sec = nil
			text.Reset()
		}
	}
	inCode := false
	for n, line := range strings.Split(string(b), "\n") {
		n++
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		switch {
		case !inCode && strings.HasPrefix(line, "## "):
			flush()
			m := heading.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %w: want \"## [Unreleased]\" or \"## [vX.Y.Z] - YYYY-MM-DD\", got %q", n, ErrMalformed, line)
			}
			if m[1] == Unreleased && m[2] != "" || m[1] != Unreleased && (!semver.MatchString(m[1]) || m[2] == "") {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %w: want \"## [Unreleased]\" or \"## [vX.Y.Z] - YYYY-MM-DD\", got %q", n, ErrMalformed, line)
			}
			sec = &Section{Title: m[1], Date: m[2], Line: n}
			continue
		case !inCode && strings.HasPrefix(line, "### "):
			if sec == nil {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %w: %q before any \"## \" section", n, ErrMalformed, line)
			}
			kind := strings.TrimSpace(strings.TrimPrefix(line, "### "))
			if !slices.Contains(Kinds, kind) {
				return nil, fmt.Errorf("CHANGELOG.md:%d: %w: subsection %q is none of %s", n, ErrMalformed, kind, strings.Join(Kinds, ", "))
			}
			flushSub()
			for _, s := range sec.Subsections {
				if s.Kind == kind {
					return nil, fmt.Errorf("CHANGELOG.md:%d: %w: a second %q in [%s]", n, ErrMalformed, kind, sec.Title)
				}
			}
			sub = &Subsection{Kind: kind, Line: n}
		}
		if sec == nil {
			continue
		}
		text.WriteString(line)
		text.WriteByte('\n')
		if sub == nil {
			continue
		}
		subText.WriteString(line)
		subText.WriteByte('\n')
		if row, ok := tableRow(line); ok && !inCode {
			row.Line = n
			sub.Rows = append(sub.Rows, row)
		}
	}
	flush()
	if len(c.Sections) == 0 || c.Sections[0].Title != Unreleased {
		return nil, fmt.Errorf("CHANGELOG.md: %w: the first section is not \"## [Unreleased]\"", ErrMalformed)
	}
	for i, s := range c.Sections[1:] {
		if s.Title == Unreleased {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %w: a second Unreleased section", s.Line, ErrMalformed)
		}
		if prev := c.Sections[i]; prev.Title != Unreleased && Compare(s.Title, prev.Title) >= 0 {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %w: %s comes after %s: newest first", s.Line, ErrMalformed, s.Title, prev.Title)
		}
	}
	return c, nil
}

// tableRow reads a line of a table that is neither its header (a first
// cell "before" or "name") nor its separator.
func tableRow(line string) (Row, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return Row{}, false
	}
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	if strings.Trim(cells[0], "-: ") == "" || cells[0] == "before" || cells[0] == "name" {
		return Row{}, false
	}
	return Row{Cells: cells}, true
}

// Section returns the section titled title ("Unreleased", "v0.4.0").
func (c *Changelog) Section(title string) (*Section, bool) {
	for i := range c.Sections {
		if c.Sections[i].Title == title {
			return &c.Sections[i], true
		}
	}
	return nil, false
}

// Subsection returns the section's subsection of kind ("Changed"), or nil.
func (s *Section) Subsection(kind string) *Subsection {
	for i := range s.Subsections {
		if s.Subsections[i].Kind == kind {
			return &s.Subsections[i]
		}
	}
	return nil
}
