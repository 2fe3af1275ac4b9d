package reconcile_test

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// metricValue sums the values of a counter or gauge family in
// controller-runtime's registry over the series whose labels include want.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
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
	series:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if !hasLabel(m, k, v) {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestLoopCostIsVisibleOnTheManagersMetrics proves the counters a Loop's
// cost shows up in are served from controller-runtime's registry (the
// manager's /metrics): status writes, decisions by class, events.
func TestLoopCostIsVisibleOnTheManagersMetrics(t *testing.T) {
	written := map[string]string{"result": "written"}
	unchanged := map[string]string{"result": "unchanged"}
	decided := map[string]string{"class": "none"}
	normal := map[string]string{"type": "Normal"}
	before := map[string]float64{
		"written":   metricValue(t, "reconcilekit_status_writes_total", written),
		"unchanged": metricValue(t, "reconcilekit_status_writes_total", unchanged),
		"decided":   metricValue(t, "reconcilekit_reconcile_decisions_total", decided),
		"events":    metricValue(t, "reconcilekit_events_total", normal),
	}
	f, c := newLoopFixture(t)
	f.loop.Recorder = events.NewFakeRecorder(4)
	req := createWidget(t, c, env.Namespace(t), "m")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	if _, err := f.loop.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{
		"written":   metricValue(t, "reconcilekit_status_writes_total", written) - before["written"],
		"unchanged": metricValue(t, "reconcilekit_status_writes_total", unchanged) - before["unchanged"],
		"decided":   metricValue(t, "reconcilekit_reconcile_decisions_total", decided) - before["decided"],
		"events":    metricValue(t, "reconcilekit_events_total", normal) - before["events"],
	}
	// Converge: one reconcile that writes, one idempotency run; then one
	// more resync: one write, two unchanged, three decisions, one event.
	want := map[string]float64{"written": 1, "unchanged": 2, "decided": 3, "events": 1}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v more, want %v (all: %v)", k, got[k], w, got)
		}
	}
}

// TestEnsureCountsItsOperations proves reconcilekit_ensure_total counts each
// call by kind and operation: created, then unchanged.
func TestEnsureCountsItsOperations(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	created := map[string]string{"kind": "ConfigMap", "operation": "created"}
	unchanged := map[string]string{"kind": "ConfigMap", "operation": "unchanged"}
	before := []float64{metricValue(t, "reconcilekit_ensure_total", created), metricValue(t, "reconcilekit_ensure_total", unchanged)}
	for range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}, Data: map[string]string{"k": "v"}}
		if _, err := reconcile.Ensure(t.Context(), c, cm); err != nil {
			t.Fatal(err)
		}
	}
	got := []float64{metricValue(t, "reconcilekit_ensure_total", created) - before[0], metricValue(t, "reconcilekit_ensure_total", unchanged) - before[1]}
	if got[0] != 1 || got[1] != 2 {
		t.Errorf("ensure_total grew by created=%v unchanged=%v, want 1 and 2", got[0], got[1])
	}
}
