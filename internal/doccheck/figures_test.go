package doccheck_test

// The figures the documentation quotes from a benchmark are checked against
// BENCHMARKS.md, which `make bench` writes (generated, never edited by
// hand): a run whose figures differ makes this test fail until the
// documentation quotes them. Sources: README.md, docs/*.md, the examples'
// READMEs, CHANGELOG.md's Unreleased section (released sections are
// history) and the comments of the library packages.
//
// Each quoted figure carries a marker naming where in BENCHMARKS.md it
// comes from, invisible to readers:
//
//   - in Markdown, an HTML comment right after the figure:
//     about 48 bytes<!--bench: [BenchmarkRetainedBytesPerEvent @ recorder-B/event]-->
//   - in a Go comment, a directive line (go doc and pkg.go.dev do not show
//     it; gofmt moves it to the end of the comment) quoting the words of
//     the comment that end with the figure:
//     //bench:figure "About 48 bytes" [BenchmarkRetainedBytesPerEvent @ recorder-B/event]
//
// A reference [cell; cell; ... @ column] names the row of a table of
// BENCHMARKS.md that has every given cell (backticks aside; a cell ending
// with "…" matches by its start; the heading above the table counts as a
// cell of each of its rows) and the column by its header, or by the unit
// of a figure in one of the row's cells ("recorder-B/event" in "other
// units"). "#2" after the column takes the cell's second number ("9566 ms
// (9169 ms–10106 ms)": 9169). A row found in several tables must give the
// same figure in each. ["words" #n] is the nth figure after those words,
// on their line of BENCHMARKS.md's prose. References add up with "+" and
// "−", "[...] × 0.45" multiplies one, and "÷" divides one sum by another (a
// ratio, in ×).
//
// The figure must be the source's to the precision the document shows it
// ("about 48" for 47.79 passes, "about 44" fails; "2.8 KB" for 2800 B
// passes, "2.9 KB" fails), converted to the document's unit (ns, µs, ms,
// s; B, bytes, KB, MB, KiB, MiB; ×).
//
// A paragraph (a list item, a table) that quotes the last make bench (it
// names BENCHMARKS.md, make bench, or a benchmark BENCHMARKS.md lists), and
// every paragraph under a heading marked <!--bench: every figure-->, must
// mark each figure with a unit it gives. Two markers say a figure is not
// the last run's: <!--bench: not measured--> right after a figure that is
// no measurement (a goal, a struct's size); <!--bench: other run-->
// anywhere in a paragraph whose unmarked figures are another run's, which
// its words name for the reader. In a Go comment: //bench:other "words
// ending with the figure", and //bench:other alone for the whole comment.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// benchTable is one table of BENCHMARKS.md.
type benchTable struct {
	section string // the heading above it
	header  []string
	rows    [][]string
}

// tableCells splits a Markdown table line into its trimmed cells.
func tableCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// benchmarks is BENCHMARKS.md: its tables, and its text for the figures
// of its prose.
type benchmarks struct {
	tables []benchTable
	text   string
}

// parseBenchmarks reads every table of BENCHMARKS.md.
func parseBenchmarks(md string) *benchmarks {
	var tables []benchTable
	var cur *benchTable
	section := ""
	lines := strings.Split(md, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "#") {
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			cur = nil
			continue
		}
		if cur == nil {
			if i+1 >= len(lines) || !isSeparator(lines[i+1]) {
				continue
			}
			tables = append(tables, benchTable{section: section, header: tableCells(line)})
			cur = &tables[len(tables)-1]
			continue
		}
		if isSeparator(line) {
			continue
		}
		cur.rows = append(cur.rows, tableCells(line))
	}
	return &benchmarks{tables: tables, text: md}
}

func isSeparator(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "|") && strings.Trim(line, "|-: ") == ""
}

// cellRef names one figure of BENCHMARKS.md: the row that has every one of
// cells, in column (a header, or a unit), its nth number.
type cellRef struct {
	phrase string // ["words of BENCHMARKS.md's prose" #n]: the nth figure after them
	cells  []string
	column string
	nth    int
	factor float64 // "[...] × 10000": the figure times a count
}

// figureExpr is a sum of cells, or a sum over a sum (a ratio).
type figureExpr struct {
	num, den []cellRef
}

// parseFigureExpr reads "[a; b @ col] + [c @ col#2] ÷ [d @ col]".
func parseFigureExpr(s string) (figureExpr, error) {
	var e figureExpr
	parts, _ := splitOutside(s, '÷')
	if len(parts) > 2 {
		return e, fmt.Errorf("%q: more than one ÷", s)
	}
	for i, part := range parts {
		var sum []cellRef
		terms, signs := splitOutside(part, '+', '−')
		for k, term := range terms {
			term = strings.TrimSpace(term)
			factor := 1.0
			if signs[k] == '−' {
				factor = -1
			}
			if end := strings.LastIndex(term, "]"); end >= 0 {
				if f, ok := strings.CutPrefix(strings.TrimSpace(term[end+1:]), "×"); ok {
					v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
					if err != nil {
						return e, fmt.Errorf("%q: %q is not [reference] × a number", s, term)
					}
					term, factor = term[:end+1], factor*v
				}
			}
			if !strings.HasPrefix(term, "[") || !strings.HasSuffix(term, "]") {
				return e, fmt.Errorf("%q: %q is not a reference [cell; ... @ column]", s, term)
			}
			if inner := strings.TrimSpace(term[1 : len(term)-1]); strings.HasPrefix(inner, `"`) {
				q, err := strconv.QuotedPrefix(inner)
				if err != nil {
					return e, fmt.Errorf("%q: %q: %w", s, term, err)
				}
				r := cellRef{nth: 1, factor: factor}
				r.phrase, _ = strconv.Unquote(q)
				if n, ok := strings.CutPrefix(strings.TrimSpace(inner[len(q):]), "#"); ok {
					if r.nth, err = strconv.Atoi(n); err != nil || r.nth < 1 {
						return e, fmt.Errorf("%q: bad number #%s", s, n)
					}
				}
				sum = append(sum, r)
				continue
			}
			rowPart, col, ok := strings.Cut(term[1:len(term)-1], "@")
			if !ok {
				return e, fmt.Errorf("%q: %q names no column (@ column)", s, term)
			}
			r := cellRef{column: strings.TrimSpace(col), nth: 1, factor: factor}
			if c, n, ok := strings.Cut(r.column, "#"); ok {
				v, err := strconv.Atoi(strings.TrimSpace(n))
				if err != nil || v < 1 {
					return e, fmt.Errorf("%q: bad number #%s", s, n)
				}
				r.column, r.nth = strings.TrimSpace(c), v
			}
			for _, c := range strings.Split(rowPart, ";") {
				if c = strings.Trim(strings.TrimSpace(c), "`"); c != "" {
					r.cells = append(r.cells, c)
				}
			}
			if len(r.cells) == 0 || r.column == "" {
				return e, fmt.Errorf("%q: %q needs a row and a column", s, term)
			}
			sum = append(sum, r)
		}
		if i == 0 {
			e.num = sum
		} else {
			e.den = sum
		}
	}
	return e, nil
}

// splitOutside splits s at each of seps outside brackets, and returns the
// parts and the separator before each (0 before the first).
func splitOutside(s string, seps ...rune) (parts []string, before []rune) {
	depth, start := 0, 0
	var sep rune
	for i, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0 && slices.Contains(seps, r):
			parts, before = append(parts, s[start:i]), append(before, sep)
			start, sep = i+len(string(r)), r
		}
	}
	return append(parts, s[start:]), append(before, sep)
}

// number matches a figure: "1,070", "47.79", "0.87", with its unit if any.
var number = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?(` + unitPattern + `))?`)

const unitPattern = `×|ns|µs|ms|s|B|bytes|KB|kB|MB|KiB|MiB|GiB`

// figureAtEnd matches a figure ending the text before a marker.
var figureAtEnd = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?(` + unitPattern + `))?\s*$`)

// figureTokens returns the start and end of every figure with a unit in
// line ("6.27 µs", "0.87×", "1,070 bytes"), for the paragraphs that must
// mark theirs.
func figureTokens(line string) [][2]int {
	var out [][2]int
	for _, m := range number.FindAllStringSubmatchIndex(line, -1) {
		if m[6] < 0 {
			continue // no unit: a count
		}
		if m[0] > 0 {
			if r, _ := utf8.DecodeLastRuneInString(line[:m[0]]); r == '.' || r == ',' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue
			}
		}
		if r, _ := utf8.DecodeRuneInString(line[m[1]:]); r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			continue // "5 sharded"
		}
		out = append(out, [2]int{m[0], m[1]})
	}
	return out
}

// units are the scale of each unit within its kind.
var units = map[string]struct {
	kind  string
	scale float64
}{
	"ns": {"time", 1e-9}, "µs": {"time", 1e-6}, "ms": {"time", 1e-3}, "s": {"time", 1},
	"B": {"bytes", 1}, "bytes": {"bytes", 1}, "KB": {"bytes", 1e3}, "kB": {"bytes", 1e3}, "MB": {"bytes", 1e6},
	"KiB": {"bytes", 1 << 10}, "MiB": {"bytes", 1 << 20}, "GiB": {"bytes", 1 << 30},
	"×": {"ratio", 1},
}

// quantity is a figure and its unit ("" for a count).
type quantity struct {
	value float64
	unit  string
}

// convert returns q in unit to, or an error when the kinds differ.
func (q quantity) convert(to string) (float64, error) {
	if to == "" || q.unit == "" || to == q.unit {
		return q.value, nil
	}
	from, ok1 := units[q.unit]
	into, ok2 := units[to]
	if !ok1 || !ok2 || from.kind != into.kind {
		return 0, fmt.Errorf("cannot give %v %s in %s", q.value, q.unit, to)
	}
	return q.value * from.scale / into.scale, nil
}

// columnUnit is the unit of the bare numbers of a column: "ns/op" holds ns.
func columnUnit(header string) string {
	switch header {
	case "ns/op":
		return "ns"
	case "B/op":
		return "B"
	}
	return ""
}

// numbersIn returns the figures of a cell with their units.
func numbersIn(cell, defaultUnit string) []quantity {
	var out []quantity
	for _, m := range number.FindAllStringSubmatch(cell, -1) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "")+"."+m[2]+"0", 64)
		if err != nil {
			continue
		}
		u := m[3]
		if u == "" {
			u = defaultUnit
		}
		out = append(out, quantity{v, u})
	}
	return out
}

// resolve finds the figure r names.
func resolve(tables *benchmarks, r cellRef) (quantity, error) {
	var found []quantity
	var where []string
	if r.phrase != "" {
		return phraseFigure(tables.text, r.phrase, r.nth)
	}
	for _, tb := range tables.tables {
		col := slices.Index(tb.header, r.column)
		for _, row := range tb.rows {
			if !hasCells(append([]string{tb.section}, row...), r.cells) {
				continue
			}
			var q quantity
			var ok bool
			switch {
			case col >= 0 && col < len(row):
				nums := numbersIn(row[col], columnUnit(r.column))
				if r.nth <= len(nums) {
					q, ok = nums[r.nth-1], true
				}
			case col < 0:
				q, ok = unitFigure(row, r.column, r.nth)
			}
			if !ok {
				continue
			}
			found = append(found, q)
			where = append(where, tb.section)
		}
	}
	if len(found) == 0 {
		return quantity{}, fmt.Errorf("no row of BENCHMARKS.md has %q with a figure in %q", r.cells, r.column)
	}
	for _, q := range found[1:] {
		if q != found[0] {
			return quantity{}, fmt.Errorf("rows with %q in several tables (%q) give different figures in %q: name the row by more of its cells", r.cells, where, r.column)
		}
	}
	return found[0], nil
}

// hasCells reports whether row has every cell of want; a cell of want
// ending with "…" is the start of one.
func hasCells(row, want []string) bool {
	for _, w := range want {
		prefix, cut := strings.CutSuffix(w, "…")
		if !slices.ContainsFunc(row, func(c string) bool {
			c = strings.Trim(c, "`")
			return c == w || cut && strings.HasPrefix(c, prefix)
		}) {
			return false
		}
	}
	return true
}

// unitFigure finds in a row's cells the nth figure written with unit
// ("47.79 recorder-B/event").
func unitFigure(row []string, unit string, nth int) (quantity, bool) {
	re := regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))? ` + regexp.QuoteMeta(unit) + `(?:[,\s]|$)`)
	n := 0
	for _, c := range row {
		for _, m := range re.FindAllStringSubmatch(c, -1) {
			if n++; n == nth {
				v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "")+"."+m[2]+"0", 64)
				return quantity{v, baseUnit(unit)}, err == nil
			}
		}
	}
	return quantity{}, false
}

// phraseFigure finds the nth figure after the words phrase, which
// BENCHMARKS.md's text must hold once.
func phraseFigure(text, phrase string, nth int) (quantity, error) {
	if n := strings.Count(text, phrase); n != 1 {
		return quantity{}, fmt.Errorf("BENCHMARKS.md holds %q %d times, not once", phrase, n)
	}
	_, after, _ := strings.Cut(text, phrase)
	line, _, _ := strings.Cut(after, "\n")
	nums := numbersIn(line, "")
	if nth > len(nums) {
		return quantity{}, fmt.Errorf("BENCHMARKS.md has no figure #%d after %q on its line", nth, phrase)
	}
	return nums[nth-1], nil
}

// baseUnit is the unit of a figure written "47.79 recorder-B/event" or
// "1075 B/object": B; "" when it is none of units ("0.36 stale-reads/op").
func baseUnit(unit string) string {
	base, _, _ := strings.Cut(unit, "/")
	if i := strings.LastIndex(base, "-"); i >= 0 {
		base = base[i+1:]
	}
	if _, ok := units[base]; ok {
		return base
	}
	return ""
}

// eval computes e: a sum in the unit of its first term, or a ratio (×).
func (e figureExpr) eval(tables *benchmarks) (quantity, error) {
	sum := func(refs []cellRef) (quantity, error) {
		var total quantity
		for i, r := range refs {
			q, err := resolve(tables, r)
			if err != nil {
				return quantity{}, err
			}
			q.value *= r.factor
			if i == 0 {
				total = q
				continue
			}
			v, err := q.convert(total.unit)
			if err != nil {
				return quantity{}, err
			}
			total.value += v
		}
		return total, nil
	}
	num, err := sum(e.num)
	if err != nil || e.den == nil {
		return num, err
	}
	den, err := sum(e.den)
	if err != nil {
		return quantity{}, err
	}
	d, err := den.convert(num.unit)
	if err != nil {
		return quantity{}, err
	}
	return quantity{num.value / d, "×"}, nil
}

// checkFigure compares the figure at the end of before with what expr
// names, to the precision the figure is written with.
func checkFigure(tables *benchmarks, before, expr string) error {
	m := figureAtEnd.FindStringSubmatch(before)
	if m == nil {
		return fmt.Errorf("a marker [%s] follows no figure", expr)
	}
	shown := strings.TrimSpace(m[0])
	doc, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "")+"."+m[2]+"0", 64)
	e, err := parseFigureExpr(expr)
	if err != nil {
		return err
	}
	src, err := e.eval(tables)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	want, err := src.convert(m[3])
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	slack := 0.5 * math.Pow10(-len(m[2]))
	if math.Abs(doc-want) > slack*(1+1e-9) {
		return fmt.Errorf("says %s, BENCHMARKS.md has %s (%s)", shown, formatFigure(want, len(m[2]), m[3]), expr)
	}
	return nil
}

func formatFigure(v float64, decimals int, unit string) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// mdMarker is a figure's marker in Markdown.
var mdMarker = regexp.MustCompile(`<!--\s*bench:\s*(.*?)\s*-->`)

// citesBench reports whether a paragraph quotes the last make bench: it
// names BENCHMARKS.md, make bench, or a benchmark of names.
func citesBench(par string, names map[string]bool) bool {
	if strings.Contains(par, "BENCHMARKS.md") || strings.Contains(par, "make bench") {
		return true
	}
	for _, m := range benchName.FindAllString(par, -1) {
		if names[m] {
			return true
		}
	}
	return false
}

var benchName = regexp.MustCompile(`\bBenchmark[A-Z]\w*`)

// benchmarkNames are the benchmarks BENCHMARKS.md lists ("BenchmarkGet").
func benchmarkNames(tables *benchmarks) map[string]bool {
	names := map[string]bool{}
	for _, tb := range tables.tables {
		for _, row := range tb.rows {
			for _, c := range row {
				for _, m := range benchName.FindAllString(c, -1) {
					names[m] = true
				}
			}
		}
	}
	return names
}

// The markers that say where a figure does not come from make bench.
const (
	// otherRun, anywhere in a paragraph: its figures are another run's,
	// which its text names.
	otherRun = "other run"
	// notMeasured, right after a figure: it is no measurement (the size
	// of a Go struct, a count the design fixes).
	notMeasured = "not measured"
	// everyFigure, in a heading or a paragraph: every figure from there to
	// the next heading of the same level or above (to the end of the page
	// when the page's title holds it) quotes make bench, whether or not
	// its paragraph says so.
	everyFigure = "every figure"
)

// checkMarkdown returns what is wrong with the figures of a Markdown text:
// a marked figure BENCHMARKS.md does not give, and a figure without marker
// in a paragraph that quotes make bench.
func checkMarkdown(src, md string, tables *benchmarks, names map[string]bool) []string {
	var problems []string
	inCode := false
	var par []string
	lineOf := 0
	level, scope := 0, -1 // the current heading's level; everyFigure's, or -1
	flush := func() {
		defer func() { par = nil }()
		text := strings.Join(par, "\n")
		if text == "" {
			return
		}
		line := func(offset int) int { return lineOf + strings.Count(text[:offset], "\n") }
		exempt := false
		for _, loc := range mdMarker.FindAllStringSubmatchIndex(text, -1) {
			switch expr := text[loc[2]:loc[3]]; expr {
			case otherRun:
				exempt = true
			case notMeasured:
			case everyFigure:
				if scope < 0 || level < scope {
					scope = level
				}
			default:
				// The figure is the text before the marker.
				if err := checkFigure(tables, mdMarker.ReplaceAllString(text[:loc[0]], ""), expr); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %v", src, line(loc[0]), err))
				}
			}
		}
		if exempt || scope < 0 && !citesBench(mdMarker.ReplaceAllString(text, ""), names) {
			return
		}
		markers := mdMarker.FindAllStringIndex(text, -1)
		for _, loc := range figureTokens(text) {
			if slices.ContainsFunc(markers, func(m []int) bool { return m[0] <= loc[0] && loc[0] < m[1] }) {
				continue // inside a marker: a row's name
			}
			if strings.HasPrefix(strings.TrimLeft(text[loc[1]:], " "), "<!--bench:") || strings.HasPrefix(strings.TrimLeft(text[loc[1]:], " "), "<!-- bench:") {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s:%d: %q quotes make bench without a marker naming its row of BENCHMARKS.md (how to mark it: internal/doccheck/figures_test.go)", src, line(loc[0]), spaces(text[loc[0]:loc[1]])))
		}
	}
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			flush()
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		if trimmed == "" {
			flush()
			continue
		}
		if h := len(line) - len(strings.TrimLeft(line, "#")); h > 0 && strings.HasPrefix(line[h:], " ") {
			flush()
			level = h
			if scope >= 0 && h <= scope {
				scope = -1
			}
			lineOf = i + 1
			par = []string{line}
			flush()
			continue
		}
		if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") {
			flush() // each item of a list is a paragraph
		}
		if par == nil {
			lineOf = i + 1
		}
		par = append(par, line)
	}
	flush()
	return problems
}

// goFigure is a //bench:figure directive: the words of its comment that end
// with the figure, and the reference.
var goDirective = regexp.MustCompile(`^//bench:(figure|other)\b\s*(.*)$`)

// spaces collapses every run of white space into one space.
func spaces(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkGoComment returns what is wrong with the figures of one comment
// group of a Go file: its //bench:figure directives, and the figures
// without one in a paragraph that quotes make bench.
func checkGoComment(where func(token.Pos) string, cg *ast.CommentGroup, tables *benchmarks, names map[string]bool) []string {
	pos := where(cg.Pos())
	var problems []string
	text := cg.Text()
	flat := spaces(text)
	var quotes []string
	exempt := false
	for _, c := range cg.List {
		m := goDirective.FindStringSubmatch(c.Text)
		if m == nil {
			continue
		}
		if m[1] == "other" && strings.TrimSpace(m[2]) == "" {
			exempt = true
			continue
		}
		q, err := strconv.QuotedPrefix(m[2])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %q: want //bench:figure \"words ending with the figure\" [row @ column]", where(c.Pos()), c.Text))
			continue
		}
		quote, _ := strconv.Unquote(q)
		quote = spaces(quote)
		if !strings.Contains(flat, quote) {
			problems = append(problems, fmt.Sprintf("%s: //bench:figure quotes %q, which the comment does not say", where(c.Pos()), quote))
			continue
		}
		quotes = append(quotes, quote)
		if m[1] == "other" {
			continue // no measurement, or another run's
		}
		if err := checkFigure(tables, quote, strings.TrimSpace(m[2][len(q):])); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where(c.Pos()), err))
		}
	}
	if exempt {
		return problems
	}
	for _, par := range strings.Split(text, "\n\n") {
		par = spaces(par)
		if !citesBench(par, names) {
			continue
		}
		var covered [][2]int
		for _, q := range quotes {
			for i := 0; ; {
				j := strings.Index(par[i:], q)
				if j < 0 {
					break
				}
				covered = append(covered, [2]int{i + j, i + j + len(q)})
				i += j + 1
			}
		}
		for _, loc := range figureTokens(par) {
			if slices.ContainsFunc(covered, func(c [2]int) bool { return c[0] <= loc[0] && loc[1] <= c[1] }) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %q quotes make bench without a //bench:figure line naming its row of BENCHMARKS.md (how to mark it: internal/doccheck/figures_test.go)", pos, par[loc[0]:loc[1]]))
		}
	}
	return problems
}

// checkGoFile checks every comment of a Go source file.
func checkGoFile(fset *token.FileSet, name string, src any, tables *benchmarks, names map[string]bool) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	where := func(p token.Pos) string {
		pos := fset.Position(p)
		return fmt.Sprintf("%s:%d", strings.TrimPrefix(filepath.ToSlash(pos.Filename), root+"/"), pos.Line)
	}
	var problems []string
	for _, cg := range f.Comments {
		problems = append(problems, checkGoComment(where, cg, tables, names)...)
	}
	return problems, nil
}

// TestFiguresAreTheLastMakeBench fails when a figure README.md, docs/*.md,
// an example's README, CHANGELOG.md's Unreleased section or a library
// package's comments quote from make bench is not what BENCHMARKS.md
// says, or is quoted without a marker naming its row.
func TestFiguresAreTheLastMakeBench(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	tables := parseBenchmarks(string(b))
	if len(tables.tables) < 5 {
		t.Fatalf("BENCHMARKS.md has %d tables: the parser is broken", len(tables.tables))
	}
	names := benchmarkNames(tables)
	if !names["BenchmarkRetainedBytesPerEvent"] {
		t.Fatalf("BENCHMARKS.md names no BenchmarkRetainedBytesPerEvent: the parser is broken (%v)", names)
	}

	sources := docSources(t, nil) // README.md, docs/*.md, examples/*/README.md
	_, log := changelogNames(t, nil)
	unreleased, _ := log.Section("Unreleased")
	// Keep the line numbers of CHANGELOG.md.
	sources["CHANGELOG.md"] = strings.Repeat("\n", unreleased.Line) + unreleased.Text

	var problems []string
	for _, src := range sortedKeys(sources) {
		problems = append(problems, checkMarkdown(src, sources[src], tables, names)...)
	}
	fset := token.NewFileSet()
	for _, name := range sortedKeys(libraries) {
		files, err := filepath.Glob(filepath.Join(root, libraries[name], "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			p, err := checkGoFile(fset, f, nil, tables, names)
			if err != nil {
				t.Fatal(err)
			}
			problems = append(problems, p...)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// sampleBenchmarks is a BENCHMARKS.md in little, for the self-test.
const sampleBenchmarks = `# Benchmarks

## The At operator, like for like

| scenario | metric | hand-written | reconcilekit | reconcilekit ÷ hand-written |
|---|---|---:|---:|---:|
| 1000 Ats | all DONE after the (last) schedule | 9630 ms (9269 ms–9635 ms) | 9566 ms (9169 ms–10106 ms) | 0.99× (0.99×–1.05×) |
| 1000 Ats | peak RSS of the process (VmHWM) | 57.2 MiB (56.4 MiB–58.4 MiB) | 49.1 MiB (49.1 MiB–49.7 MiB) | 0.87× (0.84×–0.87×) |

| scenario | metric | naive | hand-written |
|---|---|---:|---:|
| 1000 Ats | all DONE after the (last) schedule | 6589 ms | 9631 ms |

## The packages

| package | benchmark | ns/op | B/op | allocs/op | other units |
|---|---|---:|---:|---:|---|
| diet | ` + "`BenchmarkCachedBytesPerObject/*v1.Pod/whole`" + ` | 124390688 | 9094531 | 91369 | 4859 B/object |
| diet | ` + "`BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet`" + ` | 122535008 | 9759617 | 100457 | 1075 B/object |
| freshness | ` + "`BenchmarkCachedGet/guarded`" + ` | 6273 | 8464 | 88 |  |
| recorder | ` + "`BenchmarkRetainedBytesPerEvent`" + ` | 351609645 | 45882872 | 379489 | 1070 clientgo-B/event, 22.39 clientgo/recorder, 47.79 recorder-B/event |

Creating the Ats took 100000 ms; schedule → all DONE: 103073 ms single, 101318 ms sharded.
`

// TestTheFigureCheckFindsWhatItLooksFor proves the figure check is not
// blind: on a sample BENCHMARKS.md, figures right to the precision shown
// pass, figures that are not the source's fail, figures that quote make
// bench without a marker fail, and those of another run, so marked, do not.
func TestTheFigureCheckFindsWhatItLooksFor(t *testing.T) {
	tables := parseBenchmarks(sampleBenchmarks)
	names := benchmarkNames(tables)
	ok := []struct{ before, expr string }{
		{"about 48 bytes", "[BenchmarkRetainedBytesPerEvent @ recorder-B/event]"},
		{"47.79", "[BenchmarkRetainedBytesPerEvent @ recorder-B/event]"},
		{"1,070", "[BenchmarkRetainedBytesPerEvent @ clientgo-B/event]"},
		{"6.27 µs", "[BenchmarkCachedGet/guarded @ ns/op]"},
		{"1.1 KB", "[BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet @ B/object]"},
		{"5.9 KB", "[`BenchmarkCachedBytesPerObject/*v1.Pod/whole` @ B/object] + [BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet @ B/object]"},
		{"9.6 s", "[1000 Ats; all DONE after the (last) schedule @ reconcilekit]"},
		{"10,106 ms", "[1000 Ats; all DONE after the (last) schedule @ reconcilekit#3]"},
		{"0.87×", "[1000 Ats; peak RSS of the process (VmHWM) @ reconcilekit ÷ hand-written]"},
		{"0.86×", "[1000 Ats; peak RSS of the process (VmHWM) @ reconcilekit] ÷ [1000 Ats; peak RSS of the process (VmHWM) @ hand-written]"},
		{"10 MiB", "[BenchmarkRetainedBytesPerEvent @ clientgo-B/event] × 10000"},
		{"103.1 s", `["schedule → all DONE:" #1]`},
		{"8.1 MiB", "[1000 Ats; peak RSS of the process (VmHWM) @ hand-written] − [1000 Ats; peak RSS of the process (VmHWM) @ reconcilekit]"},
		{"4.5×", "[BenchmarkCachedBytesPerObject/*v1.Pod/whole @ B/object] ÷ [BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet @ B/object]"},
	}
	for _, c := range ok {
		if err := checkFigure(tables, c.before, c.expr); err != nil {
			t.Errorf("%q %s: %v, want no error", c.before, c.expr, err)
		}
	}
	bad := []struct{ before, expr, want string }{
		{"about 44 bytes", "[BenchmarkRetainedBytesPerEvent @ recorder-B/event]", "says 44 bytes, BENCHMARKS.md has 48 bytes"},
		{"1.2 KB", "[BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet @ B/object]", "says 1.2 KB, BENCHMARKS.md has 1.1 KB"},
		{"6.60 µs", "[BenchmarkCachedGet/guarded @ ns/op]", "says 6.60 µs, BENCHMARKS.md has 6.27 µs"},
		{"9630 ms", "[1000 Ats; all DONE after the (last) schedule @ hand-written]", "give different figures"},
		{"9 MiB", "[BenchmarkCachedGet/guarded @ ns/op]", "cannot give"},
		{"1", "[BenchmarkNoSuch @ ns/op]", "no row of BENCHMARKS.md"},
		{"and", "[BenchmarkCachedGet/guarded @ ns/op]", "follows no figure"},
	}
	for _, c := range bad {
		err := checkFigure(tables, c.before, c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %s: %v, want an error with %q", c.before, c.expr, err, c.want)
		}
	}

	// short keeps of a problem what the sample needs: where, and the figure.
	short := func(problems []string) []string {
		for i, p := range problems {
			if before, _, ok := strings.Cut(p, " quotes make bench without"); ok {
				problems[i] = before + " unmarked"
			}
		}
		return problems
	}
	md := "# A page\n\n" +
		"A paragraph of make bench: 6.27 µs<!--bench: [BenchmarkCachedGet/guarded @ ns/op]--> and 9.6 s, 0.87×.\n\n" +
		"`BenchmarkCachedGet`: 8.3 µs in one run of our own.<!--bench: other run-->\n\n" +
		"A paragraph that quotes nothing: 5 ms.\n\n" +
		"| benchmark | µs |\n|---|---|\n| `BenchmarkRetainedBytesPerEvent` | 44 bytes<!--bench: [BenchmarkRetainedBytesPerEvent @ recorder-B/event]--> |\n\n" +
		"## Costs <!--bench: every figure-->\n\n" +
		"A paragraph under a heading that quotes make bench: 0.87×<!--bench: [1000 Ats; peak RSS of the process (VmHWM) @ reconcilekit ÷ hand-written]--> and 9.6 s; " +
		"a Pod's struct is 1,240 bytes<!--bench: not measured-->.\n\n" +
		"### Below it\n\nStill in it: 3 ms.\n\n" +
		"## Another section\n\nNot in it: 4 ms.\n"
	got := short(checkMarkdown("x.md", md, tables, names))
	want := []string{
		`x.md:3: "9.6 s" unmarked`,
		`x.md:3: "0.87×" unmarked`,
		"x.md:11: says 44 bytes, BENCHMARKS.md has 48 bytes ([BenchmarkRetainedBytesPerEvent @ recorder-B/event])",
		`x.md:15: "9.6 s" unmarked`,
		`x.md:19: "3 ms" unmarked`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems in a sample Markdown (-want +got):\n%s", diff)
	}

	goSrc := `// Package p keeps about 44 bytes per event
// (BenchmarkRetainedBytesPerEvent) and 1,070 bytes otherwise, 16 bytes
// per key.
//
// In BenchmarkCachedGet, 6.27 µs.
//
//bench:figure "about 44 bytes" [BenchmarkRetainedBytesPerEvent @ recorder-B/event]
//bench:figure "In BenchmarkCachedGet, 6.27 µs" [BenchmarkCachedGet/guarded @ ns/op]
//bench:figure "says nothing of 3 ms" [BenchmarkCachedGet/guarded @ ns/op]
//bench:other "16 bytes"
package p

// F costs 8.3 µs in BenchmarkCachedGet, one run of ours.
//
//bench:other
func F() {}
`
	got, err := checkGoFile(token.NewFileSet(), "p.go", goSrc, tables, names)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		"p.go:7: says 44 bytes, BENCHMARKS.md has 48 bytes ([BenchmarkRetainedBytesPerEvent @ recorder-B/event])",
		`p.go:9: //bench:figure quotes "says nothing of 3 ms", which the comment does not say`,
		`p.go:1: "1,070 bytes" unmarked`,
	}
	if diff := cmp.Diff(want, short(got)); diff != "" {
		t.Errorf("problems in a sample Go file (-want +got):\n%s", diff)
	}
}
