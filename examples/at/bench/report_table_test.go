package bench_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// TestPackageTableComparesEachGroupWithItsBaselineAndKeepsCustomUnits proves
// the report's package table: ratios against the named baseline of the
// nearest group in the same package only, custom units shown, packages named.
func TestPackageTableComparesEachGroupWithItsBaselineAndKeepsCustomUnits(t *testing.T) {
	input := strings.Replace(sampleBench, "BenchmarkCompareChangedImage/reflect.DeepEqual-2",
		"BenchmarkCompareChangedImage/compare.Diff/unstructured-2 1000 240000 ns/op 1 B/op 1 allocs/op\nBenchmarkCompareChangedImage/reflect.DeepEqual-2", 1)
	results, err := bench.ParseGoBench(strings.NewReader(input + `pkg: github.com/reconcilekit/reconcilekit/status
BenchmarkWriterNoop/writer-2 1000 2400 ns/op 1072 B/op 3 allocs/op
BenchmarkWriterNoop/baseline-deepcopy-2 1000 600 ns/op 656 B/op 2 allocs/op
BenchmarkWriterNoop/baseline-mergefrom-2 1000 32000 ns/op 14435 B/op 328 allocs/op
BenchmarkGet/get/guarded-2 1000 9000 ns/op 1 B/op 1 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(packageTable(results)), "\n")
	want := []string{
		"| package | benchmark | ns/op | B/op | allocs/op | other units | compared with | ns/op ÷ that |",
		"|---|---|---:|---:|---:|---|---|---:|",
		"| compare | `BenchmarkCompareEqual` | 95012 | 40123 | 812 |  | – | – |",
		"| compare | `BenchmarkCompareChangedImage/compare.Diff` | 120000 | 50000 | 900 |  | – | – |",
		// A nested sub-benchmark takes the nearest group with a baseline.
		"| compare | `BenchmarkCompareChangedImage/compare.Diff/unstructured` | 240000 | 1 | 1 |  | `compare.Diff` | 2.00 |",
		"| compare | `BenchmarkCompareChangedImage/reflect.DeepEqual` | 10500.5 | 0 | 0 |  | `compare.Diff` | 0.09 |",
		"| compare | `BenchmarkCustom` | – | – | – | 3.5 writes/At | – | – |",
		"| freshness | `BenchmarkGet/get/plain` | 4467 | 2240 | 32 |  | – | – |",
		"| freshness | `BenchmarkGet/get/guarded` | 4914 | 2240 | 32 |  | `plain` | 1.10 |",
		"| freshness | `BenchmarkTrackerMemory` | 6103850 | 6026909 | 50083 | 349.4 B/entry | – | – |",
		"| status | `BenchmarkWriterNoop/writer` | 2400 | 1072 | 3 |  | `baseline-deepcopy` | 4.00 |",
		"| status | `BenchmarkWriterNoop/baseline-deepcopy` | 600 | 656 | 2 |  | – | – |",
		// The first baseline of a group is the one every row is compared with.
		"| status | `BenchmarkWriterNoop/baseline-mergefrom` | 32000 | 14435 | 328 |  | `baseline-deepcopy` | 53.33 |",
		// A group of the same name in another package has no baseline there.
		"| status | `BenchmarkGet/get/guarded` | 9000 | 1 | 1 |  | – | – |",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packageTable (-want +got):\n%s", diff)
	}
}
