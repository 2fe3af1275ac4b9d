package errors

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// terminalSentinel is what controller-runtime matches terminal errors
// against; a [Permanent] marker reports itself equal to it.
var terminalSentinel = reconcile.TerminalError(nil)

// IsTerminal reports whether controller-runtime will not retry err when a
// Reconcile returns it: what controller-runtime asks,
// errors.Is(err, reconcile.TerminalError(nil)). A [Permanent] error is
// terminal, and so is any error with a reconcile.TerminalError in its chain.
//
// It is not [Classify]'s question. There the outermost explicit decision
// wins, so Transient(reconcile.TerminalError(err)) is [ClassTransient];
// controller-runtime looks down the whole chain, and will not retry it.
// Package requeue asks both: it returns a transient error in a form
// controller-runtime retries.
func IsTerminal(err error) bool {
	return Is(err, terminalSentinel)
}

// markerError carries an explicit class chosen by the caller. Its text is the
// cause's text, unchanged, so marking an error never alters log lines or
// condition messages.
type markerError struct {
	wrapped
	class Class
	delay time.Duration
	// reason is the fallback condition reason when the cause has no more
	// specific one.
	reason string
}

// Permanent marks err as a failure that retrying cannot fix: [Classify]
// returns [ClassPermanent] for it, whatever err wraps, and
// errors.Is(Permanent(err), reconcile.TerminalError(nil)) is true, so
// controller-runtime stops retrying and counts it as a terminal error. The
// cause stays visible to [Is], [As] and [Unwrap]. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &markerError{wrapped: wrapped{err}, class: ClassPermanent, reason: "PermanentError"}
}

// Transient marks err as a failure worth retrying with backoff: [Classify]
// returns [ClassTransient] for it, even when err wraps an error that would
// otherwise classify as permanent (the outermost marker wins). The cause
// stays visible to [Is], [As] and [Unwrap]. Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &markerError{wrapped: wrapped{err}, class: ClassTransient, reason: "TransientError"}
}

// RetryAfter marks err as a failure to retry after d, not sooner: [Classify]
// returns [ClassThrottled] and d. A negative d counts as 0, which leaves the delay
// to the caller (requeue.Policy then uses its default throttle delay). The
// cause stays visible to [Is], [As] and [Unwrap]. RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &markerError{wrapped: wrapped{err}, class: ClassThrottled, delay: max(d, 0), reason: "RetryAfter"}
}

// wrapped is the text and the chain of the error a wrapper of this package
// (a marker, a reason) stands around, unchanged: wrapping an error never
// alters log lines or condition messages, and Is, As and Unwrap see the
// cause. The constructors never wrap nil.
type wrapped struct{ err error }

func (w wrapped) Error() string { return w.err.Error() }

func (w wrapped) Unwrap() error { return w.err }

// Is makes a Permanent marker match reconcile.TerminalError(nil).
func (e *markerError) Is(target error) bool {
	if e == nil || e.class != ClassPermanent {
		return false
	}
	// terminalSentinel's own Is method matches any terminal error target.
	return Is(terminalSentinel, target)
}

// Class returns the class the marker stands for, so a *markerError is
// [Classed] like any error that states its own class.
func (e *markerError) Class() Class {
	if e == nil {
		return ClassNone
	}
	return e.class
}
