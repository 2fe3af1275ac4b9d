package errors_test

import (
	stderrors "errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

var markers = []struct {
	name string
	mark func(error) error
}{
	{"Permanent", errors.Permanent},
	{"Transient", errors.Transient},
	{"RetryAfter", func(err error) error { return errors.RetryAfter(err, time.Minute) }},
}

// TestMarkersNilInNilOut proves that marking nil yields a nil error
// interface, not a typed nil that would compare non-nil.
func TestMarkersNilInNilOut(t *testing.T) {
	for _, m := range markers {
		if got := m.mark(nil); got != nil {
			t.Errorf("%s(nil) = %#v, want nil", m.name, got)
		}
	}
}

// TestMarkersKeepCause proves the cause stays visible to Is, As and Unwrap
// and the text is unchanged.
func TestMarkersKeepCause(t *testing.T) {
	cause := apierrors.NewNotFound(widgets, "w")
	for _, m := range markers {
		t.Run(m.name, func(t *testing.T) {
			err := m.mark(cause)
			if got := errors.Unwrap(err); got != cause {
				t.Errorf("Unwrap = %v, want the cause", got)
			}
			if !errors.Is(err, cause) || !stderrors.Is(err, cause) {
				t.Errorf("Is(err, cause) = false")
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se != cause {
				t.Errorf("As(*StatusError) = %v, want the cause", se)
			}
			if got, ok := errors.AsType[*apierrors.StatusError](err); !ok || got != cause {
				t.Errorf("AsType = %v, %v; want the cause", got, ok)
			}
			if !apierrors.IsNotFound(err) {
				t.Errorf("apierrors.IsNotFound(marked) = false")
			}
			if err.Error() != cause.Error() {
				t.Errorf("Error() = %q, want the cause's %q", err.Error(), cause.Error())
			}
		})
	}
}

// TestPermanentIsTerminal proves controller-runtime sees a Permanent error
// (also wrapped) as terminal, and the other markers as not terminal.
func TestPermanentIsTerminal(t *testing.T) {
	terminal := reconcile.TerminalError(nil)
	cause := errors.New("bad")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"Permanent", errors.Permanent(cause), true},
		{"wrapped Permanent", fmt.Errorf("reconcile: %w", errors.Permanent(cause)), true},
		{"joined Permanent", errors.Join(errors.New("x"), errors.Permanent(cause)), true},
		{"Transient", errors.Transient(cause), false},
		{"RetryAfter", errors.RetryAfter(cause, time.Second), false},
		{"plain", cause, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, terminal); got != tt.want {
				t.Errorf("Is(%v, TerminalError(nil)) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	// The sentinel match must not make a Permanent error equal to
	// unrelated errors.
	if errors.Is(errors.Permanent(cause), errors.New("bad")) {
		t.Errorf("Permanent(cause) matches an unrelated error with the same text")
	}
}

// TestReexports proves the re-exported functions behave as the standard
// library's, so the import can be swapped.
func TestReexports(t *testing.T) {
	if errors.ErrUnsupported != stderrors.ErrUnsupported {
		t.Errorf("ErrUnsupported is not the standard value")
	}
	base := errors.New("base")
	wrapped := errors.Errorf("ctx %d: %w", 1, base)
	if wrapped.Error() != "ctx 1: base" || errors.Unwrap(wrapped) != base {
		t.Errorf("Errorf = %q, Unwrap = %v", wrapped, errors.Unwrap(wrapped))
	}
	if j := errors.Join(nil, nil); j != nil {
		t.Errorf("Join(nil, nil) = %v, want nil", j)
	}
	if j := errors.Join(base, errors.ErrUnsupported); !errors.Is(j, errors.ErrUnsupported) || !errors.Is(j, base) {
		t.Errorf("Join loses members")
	}
}

// TestErrNoFieldOwnerIsOneSentinelAndPermanentOnceMarked proves the
// library's one missing-field-owner error is matched through wrapping and
// classifies as permanent when a writer returns it marked.
func TestErrNoFieldOwnerIsOneSentinelAndPermanentOnceMarked(t *testing.T) {
	err := errors.Permanent(fmt.Errorf("drift: create ConfigMap ns/x: %w", errors.ErrNoFieldOwner))
	if !stderrors.Is(err, errors.ErrNoFieldOwner) {
		t.Fatalf("errors.Is(%v, ErrNoFieldOwner) = false", err)
	}
	if c, _ := errors.Classify(err); c != errors.ClassPermanent {
		t.Fatalf("Classify = %v, want permanent", c)
	}
}
