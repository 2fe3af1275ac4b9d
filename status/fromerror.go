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
// For the kstatus summary, pass the same reason and message to
// [MarkStalled] or [MarkReconciling].
func FromError(t string, err error) metav1.Condition {
	if err == nil {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: ReasonSucceeded}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: errors.Reason(err), Message: errors.Message(err)}
}
