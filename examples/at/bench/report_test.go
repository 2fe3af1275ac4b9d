package bench_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSummarizeTakesNearestRankPercentiles(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    bench.Distribution
	}{
		{name: "no samples", samples: nil, want: bench.Distribution{}},
		{name: "one sample", samples: ms(7), want: bench.Distribution{N: 1, P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{name: "two samples", samples: ms(9, 1), want: bench.Distribution{N: 2, P50: time.Millisecond, P99: 9 * time.Millisecond, Max: 9 * time.Millisecond}},
		{name: "1 to 100 ms", samples: ms(hundred...), want: bench.Distribution{N: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
		{name: "negative delays count", samples: ms(-5, 3, 1), want: bench.Distribution{N: 3, P50: time.Millisecond, P99: 3 * time.Millisecond, Max: 3 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]time.Duration(nil), tt.samples...)
			if diff := cmp.Diff(tt.want, bench.Summarize(tt.samples)); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.samples); diff != "" {
				t.Errorf("Summarize modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRatioHandlesZeroes(t *testing.T) {
	tests := []struct {
		a, b float64
		want string
	}{
		{a: 0, b: 0, want: "–"},
		{a: 3, b: 0, want: "∞"},
		{a: 0, b: 4, want: "0.00"},
		{a: 1, b: 3, want: "0.33"},
		{a: 5, b: 4, want: "1.25"},
	}
	for _, tt := range tests {
		if got := bench.FormatRatio(tt.a, tt.b); got != tt.want {
			t.Errorf("FormatRatio(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestFormatters(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{bench.Number(4), "4"},
		{bench.Number(5.75), "5.75"},
		{bench.Number(0.1), "0.1"},
		{bench.Number(0), "0"},
		{bench.Number(1.004), "1"},
		{bench.Millis(1.2346), "1235 ms"},
		{bench.MiB(3 << 20), "3.0 MiB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestTableMarkdownEscapesPipesAndUsesEachRowsFormat(t *testing.T) {
	tab := bench.Table{Columns: []string{"old", "new|er"}, Ratios: []bench.Ratio{{Of: 1, Over: 0}, {Of: 0, Over: 2}}}
	tab.Add("writes | per At", nil, 4, 5)
	tab.Add("time", bench.Millis, 2, 1)
	tab.Add("zero", nil, 0, 0)
	want := "| metric | old | new\\|er | new\\|er ÷ old | old ÷ ? |\n" +
		"|---|---:|---:|---:|---:|\n" +
		"| writes \\| per At | 4 | 5 | 1.25 | – |\n" +
		"| time | 2000 ms | 1000 ms | 0.50 | – |\n" +
		"| zero | 0 | 0 | – | – |\n"
	if diff := cmp.Diff(want, tab.Markdown()); diff != "" {
		t.Errorf("Markdown (-want +got):\n%s", diff)
	}
}

func TestSpreadIsTheMedianAndRangeOfRounds(t *testing.T) {
	tests := []struct {
		in          []float64
		med, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{2}, 2, 2, 2},
		{[]float64{3, 1}, 2, 1, 3},
		{[]float64{1.1, 0.9, 1.0}, 1.0, 0.9, 1.1},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		med, lo, hi := bench.Spread(tt.in)
		if med != tt.med || lo != tt.lo || hi != tt.hi {
			t.Errorf("Spread(%v) = %v, %v, %v; want %v, %v, %v", tt.in, med, lo, hi, tt.med, tt.lo, tt.hi)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Spread changed its input: %v, was %v", tt.in, in)
		}
	}
}

const sampleBench = `goos: linux
goarch: amd64
pkg: github.com/reconcilekit/reconcilekit/compare
cpu: Intel(R) Xeon(R) Processor
BenchmarkCompareEqual-2                     	   12345	     95012 ns/op	   40123 B/op	     812 allocs/op
BenchmarkCompareChangedImage/compare.Diff-2         	    9000	    120000 ns/op	   50000 B/op	     900 allocs/op
BenchmarkCompareChangedImage/reflect.DeepEqual-2      	  100000	     10500.5 ns/op	       0 B/op	       0 allocs/op
BenchmarkCustom 10 3.5 writes/At
BenchmarkLogLine is not a result
PASS
ok  	github.com/reconcilekit/reconcilekit/compare	12.3s
pkg: github.com/reconcilekit/reconcilekit/freshness
BenchmarkGet/get/plain-2   	  224664	      4467 ns/op	    2240 B/op	      32 allocs/op
BenchmarkGet/get/guarded-2 	  257103	      4914 ns/op	    2240 B/op	      32 allocs/op
BenchmarkTrackerMemory-2 187 6103850 ns/op 349.4 B/entry 6026909 B/op 50083 allocs/op
PASS
`

const (
	comparePkg   = "github.com/reconcilekit/reconcilekit/compare"
	freshnessPkg = "github.com/reconcilekit/reconcilekit/freshness"
)

func TestParseGoBenchReadsResultLinesOnlyWithTheirPackage(t *testing.T) {
	got, err := bench.ParseGoBench(strings.NewReader(sampleBench))
	if err != nil {
		t.Fatal(err)
	}
	want := []bench.GoBench{
		{Package: comparePkg, Name: "BenchmarkCompareEqual", Iterations: 12345, Metrics: map[string]float64{"ns/op": 95012, "B/op": 40123, "allocs/op": 812}},
		{Package: comparePkg, Name: "BenchmarkCompareChangedImage/compare.Diff", Iterations: 9000, Metrics: map[string]float64{"ns/op": 120000, "B/op": 50000, "allocs/op": 900}},
		{Package: comparePkg, Name: "BenchmarkCompareChangedImage/reflect.DeepEqual", Iterations: 100000, Metrics: map[string]float64{"ns/op": 10500.5, "B/op": 0, "allocs/op": 0}},
		{Package: comparePkg, Name: "BenchmarkCustom", Iterations: 10, Metrics: map[string]float64{"writes/At": 3.5}},
		{Package: freshnessPkg, Name: "BenchmarkGet/get/plain", Iterations: 224664, Metrics: map[string]float64{"ns/op": 4467, "B/op": 2240, "allocs/op": 32}},
		{Package: freshnessPkg, Name: "BenchmarkGet/get/guarded", Iterations: 257103, Metrics: map[string]float64{"ns/op": 4914, "B/op": 2240, "allocs/op": 32}},
		{Package: freshnessPkg, Name: "BenchmarkTrackerMemory", Iterations: 187, Metrics: map[string]float64{"ns/op": 6103850, "B/entry": 349.4, "B/op": 6026909, "allocs/op": 50083}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseGoBench (-want +got):\n%s", diff)
	}
}

func TestParseGoBenchRejectsMalformedResults(t *testing.T) {
	for _, line := range []string{
		"BenchmarkX-2 100 12 ns/op 7",
		"BenchmarkX-2 100 twelve ns/op",
		"BenchmarkX-2 100 NaN ns/op",
		"BenchmarkX-2 100",
	} {
		_, err := bench.ParseGoBench(strings.NewReader("goos: linux\n" + line + "\n"))
		if !errors.Is(err, bench.ErrMalformedBench) {
			t.Errorf("ParseGoBench(%q) error = %v, want ErrMalformedBench", line, err)
		}
	}
}

func FuzzParseGoBench(f *testing.F) {
	f.Add(sampleBench)
	f.Add("BenchmarkX-2 1 1 ns/op\n")
	f.Add("BenchmarkX-a 1 1 ns/op 2 B/op\n")
	f.Add("Benchmark 0 -1e309 x\n")
	f.Fuzz(func(t *testing.T, out string) {
		results, err := bench.ParseGoBench(strings.NewReader(out))
		if err != nil {
			if !errors.Is(err, bench.ErrMalformedBench) {
				t.Fatalf("error %v does not wrap ErrMalformedBench", err)
			}
			return
		}
		for _, r := range results {
			if !strings.HasPrefix(r.Name, "Benchmark") || len(r.Metrics) == 0 {
				t.Fatalf("result %+v: want a Benchmark name and at least one metric", r)
			}
		}
	})
}
