package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrMalformedMetrics is wrapped by the error [SumMetric] returns for a
// sample line it cannot read.
var ErrMalformedMetrics = errors.New("bench: malformed metrics exposition")

// SumMetric reads the Prometheus text exposition format (what a
// controller-runtime manager serves on /metrics) and returns the sum of the
// samples of the metric called name whose labels include every pair of
// match, and how many samples matched: 0 means the metric is not exposed
// (yet). Comments and other metrics are skipped; a sample line of the
// metric that cannot be read gives an error wrapping
// [ErrMalformedMetrics].
func SumMetric(r io.Reader, name string, match map[string]string) (sum float64, samples int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ' && rest[0] != '\t') {
			continue // another metric whose name starts with this one
		}
		labels, value, err := parseSample(rest)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: line %d: %q: %v", ErrMalformedMetrics, n, line, err)
		}
		ok := true
		for k, v := range match {
			if labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			sum += value
			samples++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("bench: reading metrics: %w", err)
	}
	return sum, samples, nil
}

// parseSample reads `{a="b",c="d"} 12.5 [timestamp]` or ` 12.5`.
func parseSample(s string) (map[string]string, float64, error) {
	labels := map[string]string{}
	if s[0] == '{' {
		var err error
		labels, s, err = parseLabels(s[1:])
		if err != nil {
			return nil, 0, err
		}
	}
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return nil, 0, errors.New("want a value and an optional timestamp")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsNaN(v) {
		return nil, 0, fmt.Errorf("value %q is not a number", f[0])
	}
	return labels, v, nil
}

// parseLabels reads `a="b",c="d"}` and returns the labels and what follows
// the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, "", errors.New("want label=\"value\"")
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return nil, "", fmt.Errorf("label %q: value not quoted", key)
		}
		var v strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				v.WriteByte(s[i])
				continue
			}
			i++
			if i == len(s) {
				break
			}
			switch s[i] {
			case 'n':
				v.WriteByte('\n')
			case '\\', '"':
				v.WriteByte(s[i])
			default:
				return nil, "", fmt.Errorf("label %q: bad escape \\%c", key, s[i])
			}
		}
		if i >= len(s) {
			return nil, "", fmt.Errorf("label %q: unterminated value", key)
		}
		labels[key] = v.String()
		s = strings.TrimLeft(s[i+1:], " \t")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "}") {
			return nil, "", fmt.Errorf("after label %q: want , or }", key)
		}
	}
}
