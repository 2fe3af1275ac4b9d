package status_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/status"
)

func TestFromError(t *testing.T) {
	widgets := schema.GroupResource{Group: "testing.reconcilekit.io", Resource: "widgets"}
	tests := []struct {
		name string
		err  error
		want metav1.Condition
	}{
		{
			name: "nil error is success",
			err:  nil,
			want: metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: status.ReasonSucceeded},
		},
		{
			name: "API status error gives its reason",
			err:  fmt.Errorf("updating child: %w", apierrors.NewForbidden(widgets, "w", errors.New("no access"))),
			want: metav1.Condition{Type: "Synced", Status: metav1.ConditionFalse, Reason: "Forbidden",
				Message: `updating child: widgets.testing.reconcilekit.io "w" is forbidden: no access`},
		},
		{
			name: "permanent error",
			err:  errors.Permanent(errors.New("spec.schedule is not RFC 3339")),
			want: metav1.Condition{Type: "Synced", Status: metav1.ConditionFalse, Reason: "PermanentError",
				Message: "spec.schedule is not RFC 3339"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, status.FromError("Synced", tt.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromErrorRepeatedFailureDoesNotRewriteStatus proves the point of
// FromError: the same failure on retry, differing only in volatile details,
// leaves the conditions unchanged, so the writer sends nothing.
func TestFromErrorRepeatedFailureDoesNotRewriteStatus(t *testing.T) {
	attempt := func(n int) error {
		return fmt.Errorf("calling backend: request id %x at 2026-11-22T10:00:%02dZ: %w", 0xabc000+n, n,
			apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w",
				fmt.Errorf("resourceVersion %d is stale", 100+n)))
	}
	w, obj, patches := fakeWriter(t)
	for n := range 3 {
		if _, err := w.Patch(t.Context(), obj, func() error {
			status.MarkReconciling(obj, errors.Reason(attempt(n)), errors.Message(attempt(n)))
			status.SetCondition(obj, status.FromError("Synced", attempt(n)))
			return nil
		}); err != nil {
			t.Fatalf("attempt %d: %v", n, err)
		}
	}
	if *patches != 1 {
		t.Errorf("three identical failures sent %d status patches, want 1", *patches)
	}
	c, _ := status.FindCondition(obj, "Synced")
	if c.Reason != "Conflict" {
		t.Errorf("reason = %q, want Conflict", c.Reason)
	}
}

// TestMarkFailureActsOnTheClassItIsGiven proves the error → conditions step:
// Stalled for permanent, Reconciling for transient and throttled, nothing for
// the rest, with the error's stable reason and message; and that the class
// given wins over what the error would classify as, so the conditions agree
// with the decision that was made.
func TestMarkFailureActsOnTheClassItIsGiven(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	fail := errors.New("dial tcp 10.0.0.1:5432: connection refused")
	ready := cond("Ready", T, "Done", "", 1, t0)
	tests := []struct {
		name        string
		err         error
		class       errors.Class
		want        []metav1.Condition
		wantChanged bool
	}{
		{"permanent stalls", errors.WithReason(fail, "NoDatabase"), errors.ClassPermanent,
			[]metav1.Condition{cond("Ready", F, "NoDatabase", fail.Error(), 1, t1), cond("Stalled", T, "NoDatabase", fail.Error(), 1, t1)}, true},
		{"transient marks reconciling", fail, errors.ClassTransient,
			[]metav1.Condition{cond("Ready", U, "TransientError", fail.Error(), 1, t1), cond("Reconciling", T, "TransientError", fail.Error(), 1, t1)}, true},
		{"throttled marks reconciling", fail, errors.ClassThrottled,
			[]metav1.Condition{cond("Ready", U, "TransientError", fail.Error(), 1, t1), cond("Reconciling", T, "TransientError", fail.Error(), 1, t1)}, true},
		{"conflict changes nothing", fail, errors.ClassConflict, []metav1.Condition{ready}, false},
		{"canceled changes nothing", fail, errors.ClassCanceled, []metav1.Condition{ready}, false},
		{"none changes nothing", fail, errors.ClassNone, []metav1.Condition{ready}, false},
		{"nil error changes nothing", nil, errors.ClassPermanent, []metav1.Condition{ready}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := widget(1, 1, ready)
			changed := status.MarkFailure(w, tt.err, tt.class, status.WithClock(clocktesting.NewFakePassiveClock(t1Sub)))
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, w.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
