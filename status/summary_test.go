package status_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

type markFunc func(status.Setter, string, string, ...status.Option) bool

var marks = map[string]markFunc{
	"MarkReady":       status.MarkReady,
	"MarkReconciling": status.MarkReconciling,
	"MarkStalled":     status.MarkStalled,
}

func widget(gen, observed int64, conds ...metav1.Condition) *testapi.Widget {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Generation: gen}}
	w.Status.ObservedGeneration = observed
	w.Status.Conditions = conds
	return w
}

func TestMarkHelpersKeepSummaryConditionsConsistent(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	foreign := cond("Foreign", T, "Other", "kept", 1, t0)
	tests := []struct {
		name    string
		start   *testapi.Widget
		mark    string
		reason  string
		message string
		want    []metav1.Condition
		wantGen int64 // status.observedGeneration afterwards: the Mark helpers never write it
	}{
		{
			name: "ready from scratch", start: widget(2, 0), mark: "MarkReady", reason: "Reconciled", message: "ok",
			want:    []metav1.Condition{cond("Ready", T, "Reconciled", "ok", 2, t1)},
			wantGen: 0,
		},
		{
			name: "ready removes Reconciling and Stalled, keeps other conditions in place",
			start: widget(3, 2,
				cond("Reconciling", T, "Progressing", "", 2, t0), foreign,
				cond("Ready", U, "Progressing", "", 2, t0), cond("Stalled", T, "Failed", "", 2, t0)),
			mark: "MarkReady", reason: "Reconciled",
			want:    []metav1.Condition{foreign, cond("Ready", T, "Reconciled", "", 3, t1)},
			wantGen: 2,
		},
		{
			name:  "reconciling from ready sets Ready Unknown with the same reason",
			start: widget(4, 3, cond("Ready", T, "Reconciled", "", 3, t0)),
			mark:  "MarkReconciling", reason: "Scaling", message: "1/3 replicas",
			want: []metav1.Condition{
				cond("Ready", U, "Scaling", "1/3 replicas", 4, t1),
				cond("Reconciling", T, "Scaling", "1/3 replicas", 4, t1),
			},
			wantGen: 3,
		},
		{
			name:  "reconciling removes Stalled",
			start: widget(1, 1, cond("Stalled", T, "Failed", "", 1, t0), cond("Ready", F, "Failed", "", 1, t0)),
			mark:  "MarkReconciling",
			want: []metav1.Condition{
				cond("Ready", U, status.ReasonProgressing, "", 1, t1),
				cond("Reconciling", T, status.ReasonProgressing, "", 1, t1),
			},
			wantGen: 1,
		},
		{
			name:  "stalled from reconciling sets Ready False and removes Reconciling",
			start: widget(5, 5, cond("Reconciling", T, "Progressing", "", 5, t0), cond("Ready", U, "Progressing", "", 5, t0)),
			mark:  "MarkStalled", reason: "InvalidSpec", message: "bad schedule",
			want: []metav1.Condition{
				cond("Ready", F, "InvalidSpec", "bad schedule", 5, t1),
				cond("Stalled", T, "InvalidSpec", "bad schedule", 5, t1),
			},
			wantGen: 5,
		},
		{
			name: "empty reasons get the library's defaults", start: widget(1, 0), mark: "MarkStalled",
			want: []metav1.Condition{
				cond("Stalled", T, status.ReasonFailed, "", 1, t1),
				cond("Ready", F, status.ReasonFailed, "", 1, t1),
			},
			wantGen: 0,
		},
		{
			name:  "ready on an already ready object with a new generation moves only the condition's observedGeneration",
			start: widget(2, 1, cond("Ready", T, "Reconciled", "", 1, t0)),
			mark:  "MarkReady", reason: "Reconciled",
			want:    []metav1.Condition{cond("Ready", T, "Reconciled", "", 2, t0)},
			wantGen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := status.WithClock(clocktesting.NewFakePassiveClock(t1Sub))
			w := tt.start
			if !marks[tt.mark](w, tt.reason, tt.message, clk) {
				t.Errorf("%s reported no change", tt.mark)
			}
			if diff := cmp.Diff(tt.want, w.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if w.Status.ObservedGeneration != tt.wantGen {
				t.Errorf("status.observedGeneration = %d, want %d (left alone: only ObserveGeneration writes it)", w.Status.ObservedGeneration, tt.wantGen)
			}
			before := w.DeepCopy()
			if marks[tt.mark](w, tt.reason, tt.message, clk) {
				t.Errorf("second identical %s reported a change", tt.mark)
			}
			if diff := cmp.Diff(before, w); diff != "" {
				t.Errorf("second identical %s changed the object (-before +after):\n%s", tt.mark, diff)
			}
		})
	}
}

func TestObserveGenerationOnlyForTypesThatHaveIt(t *testing.T) {
	w := widget(3, 1)
	if !status.ObserveGeneration(w) || w.Status.ObservedGeneration != 3 {
		t.Errorf("ObserveGeneration on a Widget: observedGeneration = %d, want 3 and a change", w.Status.ObservedGeneration)
	}
	if status.ObserveGeneration(w) {
		t.Error("second ObserveGeneration reported a change")
	}
	if status.ObserveGeneration(nil) {
		t.Error("ObserveGeneration(nil) reported a change")
	}
}

// TestObserveGenerationRefusesAWrongArgumentAtCompileTime: the parameter of
// ObserveGeneration is a type a Widget satisfies and a type without
// status.observedGeneration does not, so passing the latter does not
// compile (with a parameter of type any it compiled and did nothing).
func TestObserveGenerationRefusesAWrongArgumentAtCompileTime(t *testing.T) {
	param := reflect.TypeOf(status.ObserveGeneration).In(0)
	if !reflect.TypeFor[*testapi.Widget]().Implements(param) {
		t.Errorf("ObserveGeneration(%s) does not take a *testapi.Widget", param)
	}
	for _, wrong := range []reflect.Type{
		reflect.TypeFor[*conditionsOnly](),   // conditions, no observedGeneration
		reflect.TypeFor[*corev1.ConfigMap](), // a metav1.Object without status
		reflect.TypeFor[testapi.Widget](),    // not a pointer: its setters would set a copy
	} {
		if wrong.Implements(param) {
			t.Errorf("ObserveGeneration(%s) takes a %s: a wrong argument compiles", param, wrong)
		}
	}
}

// unstructuredOf returns obj in the form a client reads it, through JSON.
func unstructuredOf(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestKstatusComputesMarkedObjects is the oracle test: cli-utils' kstatus,
// which Flux, Argo CD and kpt use, reads what the summary helpers produce as
// intended, through every transition between them.
func TestKstatusComputesMarkedObjects(t *testing.T) {
	steps := []struct {
		mark string
		bump bool // bump metadata.generation before marking
		want kstatus.Status
	}{
		{mark: "MarkReconciling", want: kstatus.InProgressStatus},
		{mark: "MarkReady", want: kstatus.CurrentStatus},
		{mark: "MarkStalled", want: kstatus.FailedStatus},
		{mark: "MarkReady", want: kstatus.CurrentStatus},
		{mark: "MarkReconciling", bump: true, want: kstatus.InProgressStatus},
		{mark: "MarkStalled", want: kstatus.FailedStatus},
		{mark: "MarkReconciling", want: kstatus.InProgressStatus},
		{mark: "MarkReady", bump: true, want: kstatus.CurrentStatus},
	}
	w := widget(1, 0)
	w.APIVersion, w.Kind = testapi.GroupVersion.String(), "Widget"
	for i, s := range steps {
		if s.bump {
			w.Generation++
		}
		marks[s.mark](w, "", "step")
		status.ObserveGeneration(w) // as the Loop does after marking
		res, err := kstatus.Compute(unstructuredOf(t, w))
		if err != nil {
			t.Fatalf("step %d %s: Compute: %v", i, s.mark, err)
		}
		if res.Status != s.want {
			t.Errorf("step %d %s: kstatus = %s (%q), want %s", i, s.mark, res.Status, res.Message, s.want)
		}
	}

	// Without a new Mark, a spec change (generation bump) reads as
	// InProgress: observedGeneration is what tells kstatus it is stale.
	w.Generation++
	res, err := kstatus.Compute(unstructuredOf(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != kstatus.InProgressStatus {
		t.Errorf("after a generation bump: kstatus = %s, want InProgress", res.Status)
	}
}
