package health

import (
	"github.com/reconcilekit/reconcilekit/status"
)

// Mark sets parent's summary conditions from the health of its children, a
// [Summarize] or [OfAll] result: when they are Current, the parent is Ready
// with reason and message, its own ([status.MarkReady]); when one is
// InProgress, the parent is Reconciling, and when one Failed, Stalled, with
// the reason and message [Health.ParentCondition] gives, which name the
// child ([status.MarkReconciling], [status.MarkStalled]). It reports
// whether any condition changed. A reconciler that sets its
// conditions with package status calls it where it called
// status.MarkReady; one built on reconcile.Loop reports the same through
// reconcile.Progress.WithChildren.
func Mark(parent status.Setter, children Health, reason, message string, opts ...status.Option) (changed bool) {
	switch children.Status {
	case Current:
		return status.MarkReady(parent, reason, message, opts...)
	case Failed:
		r, m := children.ParentCondition()
		return status.MarkStalled(parent, r, m, opts...)
	}
	r, m := children.ParentCondition()
	return status.MarkReconciling(parent, r, m, opts...)
}
