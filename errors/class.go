package errors

import "strconv"

// Class says what a failed reconcile should do next. [Classify] computes it;
// requeue.Policy acts on it. Its String form is a lowercase word that
// completes a log sentence ("reconcile failed: conflict").
//
// The classes for a permanent and a transient failure are named
// [ClassPermanent] and [ClassTransient] because [Permanent] and [Transient]
// are the functions that mark an error as such.
type Class int

const (
	// ClassNone is the class of a nil error: nothing failed.
	ClassNone Class = iota
	// ClassTransient is a failure that may go away by itself (a network
	// error, an overloaded or restarting API server, unknown errors): retry
	// with backoff and report it.
	ClassTransient
	// ClassConflict is an optimistic-concurrency failure (HTTP 409: the object
	// changed since it was read, or it already exists): retry soon, quietly,
	// after reading the newer object.
	ClassConflict
	// ClassThrottled is a request to slow down (HTTP 429, or any API status with a
	// Retry-After, or a [RetryAfter] marker): retry after the delay
	// [Classify] returns, not sooner.
	ClassThrottled
	// ClassPermanent is a failure that retrying the same input cannot fix
	// (the object is invalid, a [Permanent] marker, a
	// reconcile.TerminalError): do not retry until the object changes.
	ClassPermanent
	// ClassCanceled is context.Canceled: the work was cut short, normally because
	// the controller is shutting down. It is not a failure of the reconcile
	// and is not logged as one; requeue.Policy treats it as transient when
	// its own context is still alive.
	ClassCanceled
)

var classNames = [...]string{
	ClassNone:      "none",
	ClassTransient: "transient",
	ClassConflict:  "conflict",
	ClassThrottled: "throttled",
	ClassPermanent: "permanent",
	ClassCanceled:  "canceled",
}

// String returns the class as a lowercase word ("transient", "conflict",
// ...), or "Class(n)" for a value outside the declared constants.
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Retryable reports whether a reconcile that failed with class c should run
// again: true for [ClassTransient], [ClassConflict] and [ClassThrottled].
func (c Class) Retryable() bool {
	return c == ClassTransient || c == ClassConflict || c == ClassThrottled
}

// rank orders classes inside a joined error: the highest rank present
// decides the class of the whole set (see the package documentation).
func (c Class) rank() int {
	switch c {
	case ClassPermanent:
		return 1
	case ClassConflict:
		return 2
	case ClassThrottled:
		return 3
	case ClassTransient:
		return 4
	case ClassCanceled:
		return 5
	}
	return 0
}
