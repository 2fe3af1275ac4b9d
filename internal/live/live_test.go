package live_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/reconcilekit/reconcilekit/internal/live"
)

type value struct {
	n   int
	pad [64]byte // not a tiny allocation: its cleanup runs
}

type outer struct {
	other [32]byte
	inner value
}

// TestASetForgetsWhatTheProgramDropped proves a value leaves the set once
// it is unreachable, and that the set never keeps it reachable.
func TestASetForgetsWhatTheProgramDropped(t *testing.T) {
	var s live.Set[value]
	kept := &value{n: 1}
	s.Add(kept)
	s.Add(kept) // once
	func() {
		s.Add(&value{n: 2})
		o := &outer{}
		o.inner.n = 3
		s.Add(&o.inner) // inside a larger value
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the set holds %d values after the program dropped two of three, want 1", s.Len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	var seen []int
	s.Each(func(v *value) { seen = append(seen, v.n) })
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("Each saw %v, want [1]", seen)
	}
	runtime.KeepAlive(kept)
}

// TestNewGauge: a gauge of maps sends one value per map, labelled, in
// order; a gauge of none sends one unlabelled value; each scrape computes
// the values afresh.
func TestNewGauge(t *testing.T) {
	tests := []struct {
		name string
		maps []string
		want []string
	}{
		{"by map", []string{"writes", "waiters"}, []string{"map=writes 1", "map=waiters 2"}},
		{"one value", nil, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(live.NewGauge("test_entries", "Entries.", tt.maps, func() []int {
				calls++
				return []int{calls, calls + 1}
			}))
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, mf := range mfs {
				if mf.GetName() != "test_entries" || mf.GetType() != dto.MetricType_GAUGE {
					t.Errorf("gathered %s of type %v", mf.GetName(), mf.GetType())
				}
				for _, m := range mf.GetMetric() {
					var s string
					for _, l := range m.GetLabel() {
						s += l.GetName() + "=" + l.GetValue() + " "
					}
					got = append(got, fmt.Sprintf("%s%g", s, m.GetGauge().GetValue()))
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("gauge values %q, want %q", got, want)
			}
			if calls != 1 {
				t.Errorf("values computed %d times in one scrape, want 1", calls)
			}
		})
	}
}
