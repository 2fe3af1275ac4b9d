package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/errors"
)

// FromError returns a condition of type t that reports err: status False,
// reason [errors.Reason] and message [errors.Message]. Both are stable: the
// same failure on the next retry yields the same condition (no timestamps,
// request IDs or resourceVersions), so setting it again changes nothing and
// writes nothing. A nil err yields status True with reason
// [ReasonSucceeded] and an empty message.
//
// For the kstatus summary, use [MarkFailure].
func FromError(t string, err error) metav1.Condition {
	if err == nil {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: ReasonSucceeded}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: errors.Reason(err), Message: errors.Message(err)}
}

// MarkFailure is the step from a reconcile's error to the kstatus summary
// conditions: for class [errors.ClassPermanent] it marks obj Stalled
// ([MarkStalled]), for [errors.ClassTransient] and [errors.ClassThrottled]
// Reconciling ([MarkReconciling]), both with reason [errors.Reason] and
// message [errors.Message] of err; for any other class (none, a conflict, a
// cancellation: an attempt that saw a stale object or was cut short) it
// changes nothing. It reports whether anything changed.
//
// class is the error's class as decided once for the reconcile, by
// requeue.Policy.Decide (whose Decision also says, in Report, whether the
// failure has lasted long enough to be worth showing) or by errors.Classify;
// passing it in keeps the conditions and the requeue from disagreeing.
//
//	d := policy.Decide(ctx, req, res, err)
//	if d.Report {
//		status.MarkFailure(obj, d.Err, d.Class)
//	}
func MarkFailure(obj Setter, err error, class errors.Class, opts ...Option) (changed bool) {
	if err == nil {
		return false
	}
	switch class {
	case errors.ClassPermanent:
		return MarkStalled(obj, errors.Reason(err), errors.Message(err), opts...)
	case errors.ClassTransient, errors.ClassThrottled:
		return MarkReconciling(obj, errors.Reason(err), errors.Message(err), opts...)
	}
	return false
}
