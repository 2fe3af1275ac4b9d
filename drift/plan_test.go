package drift_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/drift"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

// TestPlanSaysWhatEnsureDoesAndWritesNothing proves that Writer.Plan sends
// no write and returns the Outcome the following Ensure then has, on a real
// API server: created for a missing object, updated with the drifted paths
// (including a label the field owner wrote before and no longer wants),
// unchanged when converged; and that a plan is not counted as an ensure.
func TestPlanSaysWhatEnsureDoesAndWritesNothing(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	writer := drift.NewWriter(c, testOwner)
	desired := func(labels map[string]string, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "planned", Labels: labels},
			Data:       map[string]string{"k": data},
		}
	}
	type outcome struct {
		Operation drift.Operation
		Paths     []string
	}
	ensured := map[string]string{"kind": "ConfigMap"}
	for _, step := range []struct {
		name    string
		desired *corev1.ConfigMap
		want    outcome
	}{
		{"missing", desired(map[string]string{"team": "a"}, "1"), outcome{drift.OperationCreated, nil}},
		{"converged", desired(map[string]string{"team": "a"}, "1"), outcome{drift.OperationUnchanged, nil}},
		{"drifted", desired(nil, "2"), outcome{drift.OperationUpdated, []string{"data[k]", "metadata.labels[team]"}}},
	} {
		t.Run(step.name, func(t *testing.T) {
			w.reset()
			before := metricstest.Value(t, "reconcilekit_ensure_total", ensured)
			planned, err := writer.Plan(t.Context(), step.desired.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if n := w.total(); n != 0 {
				t.Errorf("Plan sent %d writes, want none", n)
			}
			if got := metricstest.Value(t, "reconcilekit_ensure_total", ensured); got != before {
				t.Errorf("Plan moved reconcilekit_ensure_total by %v, want 0", got-before)
			}
			out, err := writer.Ensure(t.Context(), step.desired.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := outcome{planned.Operation, planned.Drift.Paths}
			if diff := cmp.Diff(step.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, outcome{out.Operation, out.Drift.Paths}); diff != "" {
				t.Errorf("Ensure did otherwise than planned (-plan +ensure):\n%s", diff)
			}
			wantWrites := 0
			if step.want.Operation != drift.OperationUnchanged {
				wantWrites = 1
			}
			if n := w.total(); n != wantWrites {
				t.Errorf("Ensure sent %d writes, want %d", n, wantWrites)
			}
		})
	}
}

// TestPlanRefusesWhatEnsureRefuses proves a plan of a write over somebody
// else's object fails as Ensure would, with a permanent *ForeignError.
func TestPlanRefusesWhatEnsureRefuses(t *testing.T) {
	c, w := countingClient(t)
	ns := env.Namespace(t)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"k": "theirs"}}
	if _, err := drift.NewWriter(c, "someone-else").Ensure(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	w.reset()
	_, err := drift.NewWriter(c, testOwner).Plan(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"k": "ours"}})
	if _, ok := rkerrors.AsType[*drift.ForeignError](err); !ok {
		t.Fatalf("Plan over a foreign object returned %v, want a *drift.ForeignError", err)
	}
	if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent {
		t.Errorf("the plan's error is %v, want permanent", class)
	}
	if n := w.total(); n != 0 {
		t.Errorf("Plan sent %d writes", n)
	}
}
