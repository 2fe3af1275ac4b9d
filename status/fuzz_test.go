package status_test

import (
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/reconcilekit/reconcilekit/status"
)

// FuzzSetCondition sets a fuzzed condition on a fuzzed list (which may hold
// duplicates) and checks: no panic; the condition is there afterwards with
// the fields asked for; LastTransitionTime is whole seconds; the other
// conditions are untouched and in order; and setting the same condition
// again changes nothing.
func FuzzSetCondition(f *testing.F) {
	f.Add("Ready", "True", "Done", "msg", int64(1), int64(0), "Ready", "False", "Other", int64(1))
	f.Add("Ready", "True", "Done", "", int64(0), int64(1_700_000_000_123), "Ready", "True", "Done", int64(0))
	f.Add("A", "Unknown", "R", "é", int64(-1), int64(-5), "B", "", "", int64(9))
	f.Add("", "", "", "", int64(0), int64(0), "", "", "", int64(0))
	f.Fuzz(func(t *testing.T, typ, st, reason, msg string, gen, lttMillis int64, exType, exStatus, exReason string, exGen int64) {
		clk := status.WithClock(clocktesting.NewFakePassiveClock(t1Sub))
		existing := []metav1.Condition{
			cond("First", metav1.ConditionTrue, "R", "", 1, t0),
			cond(exType, metav1.ConditionStatus(exStatus), exReason, "", exGen, t0),
			cond(exType, metav1.ConditionFalse, "Dup", "", exGen, t0),
		}
		c := metav1.Condition{Type: typ, Status: metav1.ConditionStatus(st), Reason: reason, Message: msg, ObservedGeneration: gen}
		if lttMillis != 0 {
			c.LastTransitionTime = metav1.NewTime(time.UnixMilli(lttMillis).UTC())
		}
		o := &conditionsOnly{c: append([]metav1.Condition(nil), existing...)}
		status.SetCondition(o, c, clk)
		conds := o.c

		got, ok := status.FindCondition(o, typ)
		if !ok {
			t.Fatalf("condition %q missing after SetCondition", typ)
		}
		if got.Status != c.Status || got.Reason != c.Reason || got.ObservedGeneration != c.ObservedGeneration {
			t.Errorf("set %+v, found %+v", c, got)
		}
		if utf8.ValidString(msg) && len(msg) <= 32768 && got.Message != msg {
			t.Errorf("message = %q, want %q", got.Message, msg)
		}
		if ltt := got.LastTransitionTime.Time; !ltt.Equal(ltt.Truncate(time.Second)) {
			t.Errorf("LastTransitionTime %v is not whole seconds", ltt)
		}
		if len(conds) < len(existing) || len(conds) > len(existing)+1 {
			t.Fatalf("%d conditions after one set on %d", len(conds), len(existing))
		}
		// Every condition but the first of the set type is unchanged.
		seen := false
		for i, e := range existing {
			if e.Type == typ && !seen {
				seen = true
				continue
			}
			if diff := cmp.Diff(e, conds[i]); diff != "" {
				t.Errorf("condition %d changed (-want +got):\n%s", i, diff)
			}
		}

		again := &conditionsOnly{c: append([]metav1.Condition(nil), conds...)}
		if status.SetCondition(again, c, clk) {
			t.Errorf("setting %+v a second time reported a change", c)
		}
		if diff := cmp.Diff(conds, again.c); diff != "" {
			t.Errorf("setting a second time changed the conditions (-first +second):\n%s", diff)
		}
	})
}
