package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

var (
	t0    = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	t1    = t0.Add(time.Hour)
	t1Sub = t1.Add(750 * time.Millisecond) // the clock's now, not on a second
)

func at(t time.Time) metav1.Time { return metav1.NewTime(t) }

func cond(typ string, s metav1.ConditionStatus, reason, msg string, gen int64, ltt time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: at(ltt)}
}

func TestSetCondition(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	ready := func(s metav1.ConditionStatus, reason, msg string, gen int64, ltt time.Time) metav1.Condition {
		return cond("Ready", s, reason, msg, gen, ltt)
	}
	other := cond("Other", T, "R", "", 1, t0)
	tests := []struct {
		name        string
		existing    []metav1.Condition
		set         metav1.Condition
		want        []metav1.Condition
		wantChanged bool
	}{
		{
			name:        "new condition is appended with the clock's now truncated to the second",
			existing:    []metav1.Condition{other},
			set:         metav1.Condition{Type: "Ready", Status: T, Reason: "Done"},
			want:        []metav1.Condition{other, ready(T, "Done", "", 0, t1)},
			wantChanged: true,
		},
		{
			name:        "new condition keeps an explicit LastTransitionTime, truncated",
			set:         ready(T, "Done", "", 0, t0.Add(999*time.Millisecond)),
			want:        []metav1.Condition{ready(T, "Done", "", 0, t0)},
			wantChanged: true,
		},
		{
			name:        "status change moves LastTransitionTime to now",
			existing:    []metav1.Condition{ready(F, "Waiting", "m", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: T, Reason: "Waiting", Message: "m", ObservedGeneration: 1},
			want:        []metav1.Condition{ready(T, "Waiting", "m", 1, t1)},
			wantChanged: true,
		},
		{
			name:        "status change to Unknown also moves LastTransitionTime",
			existing:    []metav1.Condition{ready(T, "Done", "", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: U, Reason: "Done", ObservedGeneration: 1},
			want:        []metav1.Condition{ready(U, "Done", "", 1, t1)},
			wantChanged: true,
		},
		{
			name:        "status change uses an explicit LastTransitionTime",
			existing:    []metav1.Condition{ready(F, "Waiting", "", 1, t0)},
			set:         ready(T, "Waiting", "", 1, t0.Add(30*time.Minute)),
			want:        []metav1.Condition{ready(T, "Waiting", "", 1, t0.Add(30*time.Minute))},
			wantChanged: true,
		},
		{
			name:        "reason change keeps LastTransitionTime",
			existing:    []metav1.Condition{ready(F, "Waiting", "m", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: F, Reason: "Blocked", Message: "m", ObservedGeneration: 1},
			want:        []metav1.Condition{ready(F, "Blocked", "m", 1, t0)},
			wantChanged: true,
		},
		{
			name:        "message change keeps LastTransitionTime",
			existing:    []metav1.Condition{ready(F, "Waiting", "old", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: F, Reason: "Waiting", Message: "new", ObservedGeneration: 1},
			want:        []metav1.Condition{ready(F, "Waiting", "new", 1, t0)},
			wantChanged: true,
		},
		{
			name:        "observedGeneration change keeps LastTransitionTime",
			existing:    []metav1.Condition{ready(T, "Done", "", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: T, Reason: "Done", ObservedGeneration: 2},
			want:        []metav1.Condition{ready(T, "Done", "", 2, t0)},
			wantChanged: true,
		},
		{
			name:        "same status with another explicit LastTransitionTime keeps the old one",
			existing:    []metav1.Condition{ready(T, "Done", "", 1, t0)},
			set:         ready(T, "Done", "", 1, t1),
			want:        []metav1.Condition{ready(T, "Done", "", 1, t0)},
			wantChanged: false,
		},
		{
			name:        "identical condition changes nothing",
			existing:    []metav1.Condition{other, ready(T, "Done", "m", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: T, Reason: "Done", Message: "m", ObservedGeneration: 1},
			want:        []metav1.Condition{other, ready(T, "Done", "m", 1, t0)},
			wantChanged: false,
		},
		{
			name:        "updating a condition keeps the order of all",
			existing:    []metav1.Condition{cond("A", T, "R", "", 1, t0), ready(F, "Waiting", "", 1, t0), cond("B", T, "R", "", 1, t0)},
			set:         metav1.Condition{Type: "Ready", Status: T, Reason: "Done", ObservedGeneration: 1},
			want:        []metav1.Condition{cond("A", T, "R", "", 1, t0), ready(T, "Done", "", 1, t1), cond("B", T, "R", "", 1, t0)},
			wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t1Sub)
			o := &conditionsOnly{c: append([]metav1.Condition(nil), tt.existing...)}
			changed := status.SetCondition(o, tt.set, status.WithClock(clk))
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, o.c); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetConditionTruncatesLongMessagesAtARuneBoundary(t *testing.T) {
	// The cut message ends in the marker, within 32,768 bytes. "é" is two
	// bytes; placing it across the cut (the limit less the marker) forces
	// the cut before it.
	keep := 32768 - len(status.TruncatedMarker)
	msg := strings.Repeat("a", keep-1) + "é" + "tail"
	o := &conditionsOnly{}
	status.SetCondition(o, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R", Message: msg})
	got := o.c[0].Message
	if want := strings.Repeat("a", keep-1) + status.TruncatedMarker; got != want {
		t.Errorf("message has %d bytes ending %q, want %d bytes of 'a' and %q", len(got), got[len(got)-5:], keep-1, status.TruncatedMarker)
	}
	// Setting the same long message again is not a change.
	if status.SetCondition(o, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R", Message: msg}) {
		t.Errorf("setting the same long message again reported a change")
	}
}

func TestSetConditionTakesObservedGenerationFromTheObject(t *testing.T) {
	tests := []struct {
		name    string
		set     metav1.Condition
		wantGen int64
	}{
		{name: "zero observedGeneration takes metadata.generation", set: metav1.Condition{Type: "Ready", Status: "True", Reason: "R"}, wantGen: 7},
		{name: "an explicit observedGeneration wins", set: metav1.Condition{Type: "Ready", Status: "True", Reason: "R", ObservedGeneration: 5}, wantGen: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			if !status.SetCondition(w, tt.set) {
				t.Fatal("SetCondition = false on a new condition")
			}
			if got := w.Status.Conditions[0].ObservedGeneration; got != tt.wantGen {
				t.Errorf("observedGeneration = %d, want %d", got, tt.wantGen)
			}
			if status.SetCondition(w, tt.set) {
				t.Error("second identical SetCondition reported a change")
			}
		})
	}
}

// conditionsOnly implements Setter without metav1.Object: no generation.
type conditionsOnly struct{ c []metav1.Condition }

func (o *conditionsOnly) GetConditions() []metav1.Condition  { return o.c }
func (o *conditionsOnly) SetConditions(c []metav1.Condition) { o.c = c }

func TestSetConditionOnAnObjectWithoutGenerationLeavesObservedGenerationZero(t *testing.T) {
	o := &conditionsOnly{}
	status.SetCondition(o, metav1.Condition{Type: "Ready", Status: "True", Reason: "R"})
	if got := o.c[0].ObservedGeneration; got != 0 {
		t.Errorf("observedGeneration = %d, want 0", got)
	}
}

func TestRemoveCondition(t *testing.T) {
	a, b := cond("A", "True", "R", "", 1, t0), cond("B", "False", "R", "", 1, t0)
	tests := []struct {
		name        string
		existing    []metav1.Condition
		remove      string
		want        []metav1.Condition
		wantRemoved bool
	}{
		{name: "present type is removed, order of the rest kept", existing: []metav1.Condition{a, cond("X", "True", "R", "", 1, t0), b}, remove: "X", want: []metav1.Condition{a, b}, wantRemoved: true},
		{name: "duplicates of the type are all removed", existing: []metav1.Condition{a, b, a}, remove: "A", want: []metav1.Condition{b}, wantRemoved: true},
		{name: "absent type changes nothing", existing: []metav1.Condition{a, b}, remove: "X", want: []metav1.Condition{a, b}, wantRemoved: false},
		{name: "last condition removed leaves nil", existing: []metav1.Condition{a}, remove: "A", want: nil, wantRemoved: true},
		{name: "nothing to remove from", existing: nil, remove: "A", want: nil, wantRemoved: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &testapi.Widget{}
			w.Status.Conditions = append([]metav1.Condition(nil), tt.existing...)
			if got := status.RemoveCondition(w, tt.remove); got != tt.wantRemoved {
				t.Errorf("RemoveCondition = %v, want %v", got, tt.wantRemoved)
			}
			if diff := cmp.Diff(tt.want, w.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindConditionAndPredicates(t *testing.T) {
	w := &testapi.Widget{}
	w.Status.Conditions = []metav1.Condition{
		cond("T", metav1.ConditionTrue, "R", "", 1, t0),
		cond("F", metav1.ConditionFalse, "R", "", 1, t0),
		cond("U", metav1.ConditionUnknown, "R", "", 1, t0),
	}
	type preds struct{ Found, True, False, Unknown bool }
	tests := []struct {
		typ  string
		want preds
	}{
		{"T", preds{Found: true, True: true}},
		{"F", preds{Found: true, False: true}},
		{"U", preds{Found: true, Unknown: true}},
		{"Missing", preds{Unknown: true}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			c, found := status.FindCondition(w, tt.typ)
			got := preds{found, status.IsTrue(w, tt.typ), status.IsFalse(w, tt.typ), status.IsUnknown(w, tt.typ)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if found && c.Type != tt.typ {
				t.Errorf("FindCondition(%q).Type = %q", tt.typ, c.Type)
			}
		})
	}
	// FindCondition returns a copy.
	c, _ := status.FindCondition(w, "T")
	c.Status = metav1.ConditionFalse
	if !status.IsTrue(w, "T") {
		t.Error("changing the condition FindCondition returned changed the object")
	}
}
