package drift_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

// TestEnsureCountsItsOperations proves reconcilekit_ensure_total counts each
// call by kind and operation: created, then unchanged.
func TestEnsureCountsItsOperations(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	created := map[string]string{"kind": "ConfigMap", "operation": "created"}
	unchanged := map[string]string{"kind": "ConfigMap", "operation": "unchanged"}
	before := []float64{metricstest.Value(t, "reconcilekit_ensure_total", created), metricstest.Value(t, "reconcilekit_ensure_total", unchanged)}
	for range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}, Data: map[string]string{"k": "v"}}
		if _, err := drift.NewWriter(c, testOwner).Ensure(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	got := []float64{metricstest.Value(t, "reconcilekit_ensure_total", created) - before[0], metricstest.Value(t, "reconcilekit_ensure_total", unchanged) - before[1]}
	if got[0] != 1 || got[1] != 2 {
		t.Errorf("ensure_total grew by created=%v unchanged=%v, want 1 and 2", got[0], got[1])
	}
}
