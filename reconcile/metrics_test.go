package reconcile_test

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/events"

	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// TestLoopCostIsVisibleOnTheManagersMetrics proves the counters a Loop's
// cost shows up in are served from controller-runtime's registry (the
// manager's /metrics): status writes, decisions by class, events.
func TestLoopCostIsVisibleOnTheManagersMetrics(t *testing.T) {
	written := map[string]string{"result": "written"}
	unchanged := map[string]string{"result": "unchanged"}
	decided := map[string]string{"class": "none"}
	normal := map[string]string{"type": "Normal"}
	before := map[string]float64{
		"written":   metricstest.Value(t, "reconcilekit_status_writes_total", written),
		"unchanged": metricstest.Value(t, "reconcilekit_status_writes_total", unchanged),
		"decided":   metricstest.Value(t, "reconcilekit_reconcile_decisions_total", decided),
		"events":    metricstest.Value(t, "reconcilekit_events_total", normal),
	}
	f, c := newLoopFixture(t)
	f.loop.Recorder = events.NewFakeRecorder(4)
	req := createWidget(t, c, env.Namespace(t), "m")
	reconciletest.Converge(t, f.loop, req, reconciletest.WithCounter(&f.counter))
	if _, err := f.loop.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{
		"written":   metricstest.Value(t, "reconcilekit_status_writes_total", written) - before["written"],
		"unchanged": metricstest.Value(t, "reconcilekit_status_writes_total", unchanged) - before["unchanged"],
		"decided":   metricstest.Value(t, "reconcilekit_reconcile_decisions_total", decided) - before["decided"],
		"events":    metricstest.Value(t, "reconcilekit_events_total", normal) - before["events"],
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
