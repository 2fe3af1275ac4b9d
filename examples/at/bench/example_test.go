package bench_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// Two controllers measured in the same run, printed side by side with the
// ratio ours / baseline.
func ExampleTable() {
	baseline := bench.Summarize([]time.Duration{12 * time.Millisecond, 15 * time.Millisecond, 80 * time.Millisecond})
	ours := bench.Summarize([]time.Duration{10 * time.Millisecond, 11 * time.Millisecond, 40 * time.Millisecond})
	t := bench.Table{Baseline: "classic", Ours: "reconcilekit"}
	t.Add("writes per At", 3, 4, nil)
	t.Add("Pod created − schedule, p50", baseline.P50.Seconds(), ours.P50.Seconds(), bench.Millis)
	t.Add("Pod created − schedule, max", baseline.Max.Seconds(), ours.Max.Seconds(), bench.Millis)
	fmt.Print(t.Markdown())
	// Output:
	// | metric | classic | reconcilekit | ratio (reconcilekit / classic) |
	// |---|---:|---:|---:|
	// | writes per At | 3 | 4 | 1.33 |
	// | Pod created − schedule, p50 | 15 ms | 11 ms | 0.73 |
	// | Pod created − schedule, max | 80 ms | 40 ms | 0.50 |
}

// Folding another package's micro-benchmarks into a report.
func ExampleParseGoBench() {
	out := `pkg: github.com/reconcilekit/reconcilekit/drift
BenchmarkCompareChangedImage/drift.Diff-2      9000    120000 ns/op    50000 B/op    900 allocs/op
BenchmarkCompareChangedImage/cmp.Diff-2            3000    480000 ns/op   210000 B/op   4100 allocs/op
PASS`
	results, err := bench.ParseGoBench(strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	base := results[0].Metrics["ns/op"]
	for _, r := range results {
		fmt.Printf("%s: %s allocs/op, %s× drift.Diff\n", r.Name, bench.Number(r.Metrics["allocs/op"]), bench.Ratio(r.Metrics["ns/op"], base))
	}
	// Output:
	// BenchmarkCompareChangedImage/drift.Diff: 900 allocs/op, 1.00× drift.Diff
	// BenchmarkCompareChangedImage/cmp.Diff: 4100 allocs/op, 4.00× drift.Diff
}
