package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of the kstatus conventions
// (sigs.k8s.io/cli-utils/pkg/kstatus), read by kubectl wait, Flux, Argo CD
// and cli-utils.
const (
	// TypeReady is True when the object is fully reconciled and working.
	TypeReady = "Ready"
	// TypeReconciling is True while the controller works towards the
	// desired state. It is removed when that work is done.
	TypeReconciling = "Reconciling"
	// TypeStalled is True when the controller cannot make progress without
	// a change (a bad spec, a permanent error). It is removed otherwise.
	TypeStalled = "Stalled"
)

// Reasons the summary helpers use when the caller passes an empty reason.
// The API server rejects conditions without a reason.
const (
	// ReasonSucceeded is the default reason of [MarkReady].
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing is the default reason of [MarkReconciling].
	ReasonProgressing = "Progressing"
	// ReasonFailed is the default reason of [MarkStalled].
	ReasonFailed = "Failed"
)

// MarkReady records that obj is fully reconciled: Ready=True with reason and
// message, and no Reconciling or Stalled condition. It reports whether
// anything changed. An empty reason becomes [ReasonSucceeded]. Like every
// setter here it writes conditions only; pair it with [ObserveGeneration].
//
// kstatus computes such an object as Current.
func MarkReady(obj Setter, reason, message string, opts ...Option) (changed bool) {
	reason = orDefault(reason, ReasonSucceeded)
	changed = SetCondition(obj, metav1.Condition{Type: TypeReady, Status: metav1.ConditionTrue, Reason: reason, Message: message}, opts...)
	changed = RemoveCondition(obj, TypeReconciling) || changed
	changed = RemoveCondition(obj, TypeStalled) || changed
	return changed
}

// MarkReconciling records that work on obj is in progress: Reconciling=True
// and Ready=Unknown, both with reason and message, and no Stalled
// condition. It reports whether anything changed. An empty reason becomes
// [ReasonProgressing].
//
// kstatus computes such an object as InProgress.
func MarkReconciling(obj Setter, reason, message string, opts ...Option) (changed bool) {
	reason = orDefault(reason, ReasonProgressing)
	changed = SetCondition(obj, metav1.Condition{Type: TypeReconciling, Status: metav1.ConditionTrue, Reason: reason, Message: message}, opts...)
	changed = SetCondition(obj, metav1.Condition{Type: TypeReady, Status: metav1.ConditionUnknown, Reason: reason, Message: message}, opts...) || changed
	changed = RemoveCondition(obj, TypeStalled) || changed
	return changed
}

// MarkStalled records that obj cannot make progress until something
// changes: Stalled=True and Ready=False, both with reason and message, and no
// Reconciling condition. It reports whether anything changed. An empty reason
// becomes [ReasonFailed].
//
// kstatus computes such an object as Failed.
func MarkStalled(obj Setter, reason, message string, opts ...Option) (changed bool) {
	reason = orDefault(reason, ReasonFailed)
	changed = SetCondition(obj, metav1.Condition{Type: TypeStalled, Status: metav1.ConditionTrue, Reason: reason, Message: message}, opts...)
	changed = SetCondition(obj, metav1.Condition{Type: TypeReady, Status: metav1.ConditionFalse, Reason: reason, Message: message}, opts...) || changed
	changed = RemoveCondition(obj, TypeReconciling) || changed
	return changed
}

// ObserveGeneration sets obj's status.observedGeneration to its
// metadata.generation, and reports whether it changed. It takes only a type
// that has both ([ObservedGenerationObject]), so that a wrong argument does
// not compile; a nil obj changes nothing.
func ObserveGeneration(obj ObservedGenerationObject) (changed bool) {
	if obj == nil || obj.GetObservedGeneration() == obj.GetGeneration() {
		return false
	}
	obj.SetObservedGeneration(obj.GetGeneration())
	return true
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
