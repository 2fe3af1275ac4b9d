package errors_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reconcilekit/reconcilekit/errors"
)

func TestWithReasonNamesTheFailureAndChangesNothingElse(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cause := errors.New(`spec.port 70000 is out of range`)
	conflict := apierrors.NewConflict(pods, "web-0", errors.New("modified"))
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantClass  errors.Class
	}{
		{"plain cause", errors.WithReason(cause, "InvalidSpec"), "InvalidSpec", errors.ClassTransient},
		{"inside Permanent", errors.Permanent(errors.WithReason(cause, "InvalidSpec")), "InvalidSpec", errors.ClassPermanent},
		{"around Permanent", errors.WithReason(errors.Permanent(cause), "InvalidSpec"), "InvalidSpec", errors.ClassPermanent},
		{"wrapped with %w", fmt.Errorf("reconcile: %w", errors.WithReason(cause, "InvalidSpec")), "InvalidSpec", errors.ClassTransient},
		{"beats the API status reason", errors.WithReason(conflict, "PortTaken"), "PortTaken", errors.ClassConflict},
		{"outermost wins", errors.WithReason(errors.WithReason(cause, "Inner"), "Outer"), "Outer", errors.ClassTransient},
		{"in a joined branch", errors.Join(context.Canceled, errors.WithReason(cause, "InvalidSpec")), "InvalidSpec", errors.ClassCanceled},
		{"empty reason ignored", errors.Permanent(errors.WithReason(cause, "")), "PermanentError", errors.ClassPermanent},
		{"invalid reason ignored", errors.WithReason(conflict, "not a reason!"), "Conflict", errors.ClassConflict},
		{"too long ignored", errors.WithReason(cause, "A"+strings.Repeat("b", 1024)), "TransientError", errors.ClassTransient},
		{"invalid outer falls back to valid inner", errors.WithReason(errors.WithReason(cause, "Inner"), "9Bad"), "Inner", errors.ClassTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Reason(tt.err); got != tt.wantReason {
				t.Errorf("Reason = %q, want %q", got, tt.wantReason)
			}
			if got, _ := errors.Classify(tt.err); got != tt.wantClass {
				t.Errorf("Classify = %v, want %v", got, tt.wantClass)
			}
		})
	}
}

func TestWithReasonKeepsTheCauseAndItsText(t *testing.T) {
	cause := errors.New("boom")
	err := errors.WithReason(cause, "Exploded")
	if !errors.Is(err, cause) || errors.Unwrap(err) != cause {
		t.Error("the cause is not visible through WithReason")
	}
	if err.Error() != "boom" || errors.Message(err) != "boom" {
		t.Errorf("text changed: Error %q, Message %q", err.Error(), errors.Message(err))
	}
	if errors.WithReason(nil, "Exploded") != nil {
		t.Error("WithReason(nil, r) is not nil")
	}
}

// notCaughtUp is an error of another package that states its own class.
type notCaughtUp struct{ cause error }

func (e *notCaughtUp) Error() string       { return "cache not caught up: " + e.cause.Error() }
func (e *notCaughtUp) Unwrap() error       { return e.cause }
func (e *notCaughtUp) Class() errors.Class { return errors.ClassConflict }

// TestClassedErrorsStateTheirOwnClass proves Classify and Reason take an
// error's own Class like a marker's, with the outermost decision winning.
func TestClassedErrorsStateTheirOwnClass(t *testing.T) {
	own := &notCaughtUp{cause: errors.New("waited 2s")}
	apiCause := &notCaughtUp{cause: apierrors.NewServiceUnavailable("down")}
	tests := []struct {
		name       string
		err        error
		wantClass  errors.Class
		wantReason string
	}{
		{"alone", own, errors.ClassConflict, "notCaughtUp"},
		{"wrapped with %w", fmt.Errorf("get pod: %w", own), errors.ClassConflict, "notCaughtUp"},
		{"a specific cause's reason beneath it", apiCause, errors.ClassConflict, "ServiceUnavailable"},
		{"inside Permanent: the outer marker wins", errors.Permanent(own), errors.ClassPermanent, "PermanentError"},
		{"around a Permanent marker: it wins", &notCaughtUp{cause: errors.Permanent(errors.New("x"))}, errors.ClassConflict, "notCaughtUp"},
		{"joined with a transient error", errors.Join(own, errors.New("boom")), errors.ClassTransient, "TransientError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := errors.Classify(tt.err); got != tt.wantClass {
				t.Errorf("Classify = %v, want %v", got, tt.wantClass)
			}
			if got := errors.Reason(tt.err); got != tt.wantReason {
				t.Errorf("Reason = %q, want %q", got, tt.wantReason)
			}
		})
	}
}

// heldOff is an error of another package that states its class, the delay
// it asks for and its condition reason.
type heldOff struct{ reason string }

func (e heldOff) Error() string             { return "held off" }
func (e heldOff) Class() errors.Class       { return errors.ClassThrottled }
func (e heldOff) RetryAfter() time.Duration { return 3 * time.Minute }
func (e heldOff) Reason() string            { return e.reason }

// waitsSometime states a delay but not the throttled class.
type waitsSometime struct{}

func (waitsSometime) Error() string             { return "conflict" }
func (waitsSometime) Class() errors.Class       { return errors.ClassConflict }
func (waitsSometime) RetryAfter() time.Duration { return time.Hour }

// TestClassedErrorsMayStateTheirDelayAndReason proves the optional methods
// of a Classed error: RetryAfter is the delay of a throttled one (and of no
// other class), Reason its condition reason when the API server would accept
// it (the type's name otherwise).
func TestClassedErrorsMayStateTheirDelayAndReason(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantClass  errors.Class
		wantDelay  time.Duration
		wantReason string
	}{
		{"throttled with a delay and a reason", heldOff{reason: "HeldOff"}, errors.ClassThrottled, 3 * time.Minute, "HeldOff"},
		{"wrapped with %w", fmt.Errorf("patch: %w", heldOff{reason: "HeldOff"}), errors.ClassThrottled, 3 * time.Minute, "HeldOff"},
		{"a reason the API server refuses", heldOff{reason: "held off"}, errors.ClassThrottled, 3 * time.Minute, "heldOff"},
		{"a delay on another class is ignored", waitsSometime{}, errors.ClassConflict, 0, "waitsSometime"},
		{"an outer RetryAfter marker wins", errors.RetryAfter(heldOff{reason: "HeldOff"}, time.Second), errors.ClassThrottled, time.Second, "RetryAfter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, delay := errors.Classify(tt.err)
			if class != tt.wantClass || delay != tt.wantDelay {
				t.Errorf("Classify = %v, %v; want %v, %v", class, delay, tt.wantClass, tt.wantDelay)
			}
			if got := errors.Reason(tt.err); got != tt.wantReason {
				t.Errorf("Reason = %q, want %q", got, tt.wantReason)
			}
		})
	}
}
