package errors

// reasonError carries a condition reason chosen by the caller. Like a
// marker, it leaves the text and the class of its cause unchanged.
type reasonError struct {
	wrapped
	reason string
}

// maxExplicitReasonLength is the longest metav1.Condition.Reason the API
// server accepts.
const maxExplicitReasonLength = 1024

// WithReason gives err the condition and event reason reason, so that a
// reconciler can say why it failed in its own words:
//
//	return errors.Permanent(errors.WithReason(err, "InvalidSpec"))
//
// [Reason] returns it in place of the reason it would infer; [Classify], the
// text and the chain (for [Is] and [As]) are those of err. The outermost
// WithReason in a chain wins. A reason the API server would reject in a
// condition (empty, longer than 1024 bytes, or not CamelCase letters, digits,
// '_', ',' and ':', starting with a letter) is ignored, so that a typo cannot
// make every status write fail validation. WithReason(nil, r) is nil.
func WithReason(err error, reason string) error {
	if err == nil {
		return nil
	}
	return &reasonError{wrapped: wrapped{err}, reason: reason}
}

// explicitReason returns the outermost valid reason given with WithReason
// in err's tree, walked depth first in the order errors.As walks it.
func explicitReason(err error, budget *int) (string, bool) {
	for err != nil && *budget > 0 {
		*budget--
		if isNilPointer(err) {
			return "", false
		}
		if r, ok := err.(*reasonError); ok && len(r.reason) <= maxExplicitReasonLength && isConditionReason(r.reason) {
			return r.reason, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, branch := range u.Unwrap() {
				if r, ok := explicitReason(branch, budget); ok {
					return r, true
				}
			}
			return "", false
		default:
			return "", false
		}
	}
	return "", false
}
