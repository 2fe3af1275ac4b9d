package track

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// ReasonReferenceNotFound is the condition reason of a referenced object
// that does not exist ([MissingError]): a reconcile.Loop, or
// status.MarkFailure, shows it on the referrer's Stalled condition.
const ReasonReferenceNotFound = "ReferenceNotFound"

// MissingError reports a referenced object that does not exist. [Reads.Get]
// returns it with reason [ReasonReferenceNotFound], marked errors.Permanent
// when the object's kind is watched (its creation wakes the referrer, so
// retrying would only spin), transient otherwise. Err is the API server's NotFound,
// so apierrors.IsNotFound(err) still holds. Match it with errors.As.
type MissingError struct {
	// Reference is the missing object.
	Reference Reference
	// Referrer is the reconciled object that reads it.
	Referrer types.NamespacedName
	// Err is the error of the read.
	Err error
}

// Error names the missing object: `Secret "team-a/creds" not found`.
func (e *MissingError) Error() string {
	return fmt.Sprintf("%s not found", e.Reference)
}

// Unwrap returns the error of the read.
func (e *MissingError) Unwrap() error { return e.Err }
