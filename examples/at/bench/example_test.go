package bench_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// Three controllers measured in the same run, printed side by side with the
// ratio of the library's At to the hand-written one.
func ExampleTable() {
	handwritten := bench.Summarize([]time.Duration{12 * time.Millisecond, 15 * time.Millisecond, 80 * time.Millisecond})
	ours := bench.Summarize([]time.Duration{10 * time.Millisecond, 11 * time.Millisecond, 40 * time.Millisecond})
	naive := bench.Summarize([]time.Duration{9 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond})
	t := bench.Table{Columns: []string{"naive", "hand-written", "reconcilekit"}, Ratios: []bench.Ratio{{Of: 2, Over: 1}}}
	t.Add("writes per At", nil, 3, 5, 5)
	t.Add("Pod created − schedule, p50", bench.Millis, naive.P50.Seconds(), handwritten.P50.Seconds(), ours.P50.Seconds())
	t.Add("Pod created − schedule, max", bench.Millis, naive.Max.Seconds(), handwritten.Max.Seconds(), ours.Max.Seconds())
	fmt.Print(t.Markdown())
	// Output:
	// | metric | naive | hand-written | reconcilekit | reconcilekit ÷ hand-written |
	// |---|---:|---:|---:|---:|
	// | writes per At | 3 | 5 | 5 | 1.00 |
	// | Pod created − schedule, p50 | 10 ms | 15 ms | 11 ms | 0.73 |
	// | Pod created − schedule, max | 30 ms | 80 ms | 40 ms | 0.50 |
}

// Ratios measured over three rounds are reported as their median and range.
func ExampleSpread() {
	median, lo, hi := bench.Spread([]float64{1.10, 0.92, 0.97})
	fmt.Printf("%.2f (%.2f–%.2f)\n", median, lo, hi)
	// Output:
	// 0.97 (0.92–1.10)
}

// Folding another package's micro-benchmarks into a report.
func ExampleParseGoBench() {
	out := `pkg: github.com/reconcilekit/reconcilekit/compare
BenchmarkCompareChangedImage/compare.Diff-2      9000    120000 ns/op    50000 B/op    900 allocs/op
BenchmarkCompareChangedImage/cmp.Diff-2            3000    480000 ns/op   210000 B/op   4100 allocs/op
PASS`
	results, err := bench.ParseGoBench(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	base := results[0].Metrics["ns/op"]
	for _, r := range results {
		fmt.Printf("%s: %s allocs/op, %s× compare.Diff\n", r.Name, bench.Number(r.Metrics["allocs/op"]), bench.FormatRatio(r.Metrics["ns/op"], base))
	}
	// Output:
	// BenchmarkCompareChangedImage/compare.Diff: 900 allocs/op, 1.00× compare.Diff
	// BenchmarkCompareChangedImage/cmp.Diff: 4100 allocs/op, 4.00× compare.Diff
}
