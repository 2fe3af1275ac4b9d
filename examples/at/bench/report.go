package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Distribution summarizes a set of durations.
type Distribution struct {
	// N is the number of samples.
	N int
	// P50, P99 and Max are the median, the 99th percentile (nearest rank)
	// and the largest sample; all zero when N is 0.
	P50, P99, Max time.Duration
}

// Summarize returns the distribution of samples. It does not modify
// samples.
func Summarize(samples []time.Duration) Distribution {
	if len(samples) == 0 {
		return Distribution{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Distribution{N: len(s), P50: rank(s, 0.50), P99: rank(s, 0.99), Max: s[len(s)-1]}
}

// rank is the nearest-rank percentile of sorted samples.
func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// Row is one line of a [Table]: a metric measured on each controller.
type Row struct {
	// Metric names what was measured, with its unit ("writes per At").
	Metric string
	// Values are the measurements, one per column of the table.
	Values []float64
	// Format prints a value; nil prints it with up to two decimals.
	Format func(float64) string
}

// Ratio names a ratio column of a [Table]: the value of column Of divided by
// that of column Over, by their indexes in Columns.
type Ratio struct{ Of, Over int }

// Table compares several controllers side by side: one column per
// controller, then one column per ratio.
type Table struct {
	// Columns are the controllers' headings.
	Columns []string
	// Ratios are the ratio columns, printed after the controllers'.
	Ratios []Ratio
	// Rows are printed in order.
	Rows []Row
}

// Add appends a row; values are in the order of Columns.
func (t *Table) Add(metric string, format func(float64) string, values ...float64) {
	t.Rows = append(t.Rows, Row{Metric: metric, Values: values, Format: format})
}

// Markdown renders the table. A ratio is "–" when it is undefined (both
// zero) and "∞" when only the divisor is zero; a value missing from a row
// is "–".
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| metric |")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, " %s |", cell(c))
	}
	for _, r := range t.Ratios {
		fmt.Fprintf(&b, " %s ÷ %s |", cell(t.heading(r.Of)), cell(t.heading(r.Over)))
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(t.Columns)+len(t.Ratios)) + "\n")
	for _, r := range t.Rows {
		f := r.Format
		if f == nil {
			f = Number
		}
		fmt.Fprintf(&b, "| %s |", cell(r.Metric))
		for i := range t.Columns {
			if i < len(r.Values) {
				fmt.Fprintf(&b, " %s |", f(r.Values[i]))
			} else {
				b.WriteString(" – |")
			}
		}
		for _, q := range t.Ratios {
			if q.Of < len(r.Values) && q.Over < len(r.Values) {
				fmt.Fprintf(&b, " %s |", FormatRatio(r.Values[q.Of], r.Values[q.Over]))
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (t *Table) heading(i int) string {
	if i >= 0 && i < len(t.Columns) {
		return t.Columns[i]
	}
	return "?"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// FormatRatio formats a / b with two decimals, "–" for 0 / 0 and "∞" for
// x / 0.
func FormatRatio(a, b float64) string {
	switch {
	case b == 0 && a == 0:
		return "–"
	case b == 0:
		return "∞"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

// Spread is the median of values and their smallest and largest: how a
// figure measured over several rounds is reported. The median of an even
// number of values is the mean of the middle two; all zero when values is
// empty.
func Spread(values []float64) (median, lo, hi float64) {
	if len(values) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	m := len(s) / 2
	median = s[m]
	if len(s)%2 == 0 {
		median = (s[m-1] + s[m]) / 2
	}
	return median, s[0], s[len(s)-1]
}

// Number formats v with up to two decimals and no trailing zeros.
func Number(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Millis formats a number of seconds as milliseconds ("1234 ms").
func Millis(seconds float64) string {
	return strconv.FormatFloat(seconds*1000, 'f', 0, 64) + " ms"
}

// MiB formats a number of bytes as mebibytes ("12.3 MiB").
func MiB(bytes float64) string {
	return strconv.FormatFloat(bytes/(1<<20), 'f', 1, 64) + " MiB"
}

// GoBench is one result line of `go test -bench` output.
type GoBench struct {
	// Package is the import path of the package it ran in (from the "pkg:"
	// line before it; empty when there was none).
	Package string
	// Name is the benchmark's name without the -GOMAXPROCS suffix
	// ("BenchmarkCompareEqual/typed").
	Name string
	// Iterations is how many times the benchmark ran.
	Iterations int64
	// Metrics maps a unit ("ns/op", "B/op", "allocs/op", or a custom one)
	// to its value.
	Metrics map[string]float64
}

// ErrMalformedBench is wrapped by the error [ParseGoBench] returns for a
// line that starts like a benchmark result but is not one.
var ErrMalformedBench = errors.New("bench: malformed benchmark line")

// ParseGoBench reads `go test -bench` output, of one package or several, and
// returns its result lines in order, each with the package of the last
// "pkg:" line; other lines (goos, PASS, logs) are skipped. A result line
// whose values cannot be read gives an error wrapping [ErrMalformedBench]
// that names the line.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	var pkg string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if p, ok := strings.CutPrefix(sc.Text(), "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		iters, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue // a log line that starts with a benchmark's name
		}
		if len(fields)%2 != 0 || len(fields) < 4 {
			return nil, fmt.Errorf("%w: line %d: %q: want name, iterations and value/unit pairs", ErrMalformedBench, n, sc.Text())
		}
		res := GoBench{Package: pkg, Name: trimProcs(fields[0]), Iterations: iters, Metrics: map[string]float64{}}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil || math.IsNaN(v) {
				return nil, fmt.Errorf("%w: line %d: value %q of %s is not a number", ErrMalformedBench, n, fields[i], fields[i+1])
			}
			res.Metrics[fields[i+1]] = v
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: reading benchmark output: %w", err)
	}
	return out, nil
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}
