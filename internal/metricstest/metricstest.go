// Package metricstest reads the metrics of controller-runtime's registry in
// tests: the registry the manager's /metrics endpoint serves, where every
// reconcilekit package registers its counters.
package metricstest

import (
	"runtime"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Value sums the values of the counter or gauge family name in
// controller-runtime's registry over the series whose labels include every
// pair of want (all series when want is empty). A family that is not
// registered, or has no such series, sums to 0.
func Value(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Settled is Value once the values other tests dropped are gone from it: a
// gauge that sums over the live values of the process (the library's
// entries gauges) still counts a value dropped by an earlier test until a
// garbage collection has found it. It collects garbage and reads the
// gauge until two reads agree, for at most 5 seconds.
func Settled(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	last := Value(t, name, want)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the cleanups run in a goroutine of their own
		v := Value(t, name, want)
		if v == last {
			return v
		}
		last = v
	}
	return last
}
