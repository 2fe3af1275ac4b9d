package applyset

import (
	"fmt"
	"strings"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ReasonPruneFailed is the condition reason of a [*PruneError].
const ReasonPruneFailed = "PruneFailed"

// PruneFailure is one member that left the set and could not be deleted.
type PruneFailure struct {
	// Ref names the member.
	Ref Ref
	// Err is what the API server answered.
	Err error
}

// PruneError is the error of an Apply that could not delete every member
// that left the set: an admission webhook refused the delete, the
// operator may not delete the kind (RBAC), or the member changed since it
// was read. The members stay in the parent's record and on its
// conditions, named in the message, and the next Apply tries again.
//
// It states its own class for package errors: transient, whatever the
// server answered (a webhook's refusal is a 400, which would otherwise be
// permanent), so requeue.Policy retries it with backoff: the webhook's
// rules or the operator's RBAC can change without an event the operator
// watches. A conflict alone is a conflict: a quiet, short retry. Its
// condition reason is [ReasonPruneFailed].
type PruneError struct {
	// Failed are the members that could not be deleted, in the order the
	// Set tried them.
	Failed []PruneFailure
}

// Error names each member and the server's answer.
func (e *PruneError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = fmt.Sprintf("%s: %v", f.Ref, f.Err)
	}
	return "applyset: could not delete what left the set, kept until it goes: " + strings.Join(parts, "; ")
}

// Unwrap returns the server's answers.
func (e *PruneError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// Class is transient (retried with backoff), or conflict when every
// failure is a conflict.
func (e *PruneError) Class() errors.Class {
	for _, f := range e.Failed {
		if c, _ := errors.Classify(f.Err); c != errors.ClassConflict {
			return errors.ClassTransient
		}
	}
	return errors.ClassConflict
}

// Reason is [ReasonPruneFailed].
func (e *PruneError) Reason() string { return ReasonPruneFailed }
