package reconcile

import (
	"github.com/reconcilekit/reconcilekit/health"
)

// WithChildren returns p with the health of the object's children folded
// in, so that the object is Ready only when what it created is ready:
//
//	children, err := health.OfAll(deployment) // as Ensure left it
//	if err != nil {
//		return reconcile.Progress{}, err
//	}
//	return reconcile.Progress{Reason: "Deployed"}.WithChildren(children), nil
//
// Read the children through the client the Loop reads through, guarded by
// one freshness.Tracker (see [Loop.Freshness]): no copy is then older than
// Sync's own last write of it, and the object is never Ready on a child's
// status from before that write.
//
// children is a health.OfAll or health.Summarize result. When it
// is Current, p is returned as it is. When a child is InProgress and p is
// Done, the result is InProgress (Reconciling=True, Ready=Unknown) and, when
// a child Failed and p is not, Failed (Stalled=True, Ready=False), with the
// reason and message of [health.Health.ParentCondition], which name the
// child and its own reason ("DeploymentProgressDeadlineExceeded",
// "Deployment shop/web: ..."). Otherwise p's own state, reason and message
// stand: the worse of the two is reported, Sync's own when they are equal.
// p's Requeue is kept: a child's progress is no reason for a timer, since
// its status update wakes the Loop (give Owns() the filter
// health.Predicate()).
func (p Progress) WithChildren(children health.Health) Progress {
	var state State
	switch children.Status {
	case health.Current:
		return p
	case health.Failed:
		state = Failed
	default:
		state = InProgress
	}
	if rank(p.State) >= rank(state) {
		return p
	}
	p.State = state
	p.Reason, p.Message = children.ParentCondition()
	return p
}

// rank orders states from best to worst.
func rank(s State) int {
	switch s {
	case Done:
		return 0
	case InProgress:
		return 1
	}
	return 2
}
