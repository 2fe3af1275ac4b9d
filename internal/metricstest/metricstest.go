// Package metricstest reads the metrics of controller-runtime's registry in
// tests: the registry the manager's /metrics endpoint serves, where every
// reconcilekit package registers its counters.
package metricstest

import (
	"testing"

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
