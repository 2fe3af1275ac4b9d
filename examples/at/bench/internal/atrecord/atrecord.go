// Package atrecord is what the At records, for the yardsticks of the
// benchmark that must not import the library: the hand-written At on
// controller-runtime and the bare client-go floor. Both record exactly
// what the library's At records (their tests compare the records), so the
// label, finalizer, condition types, reasons and messages, the kstatus
// conditions of each phase, the Pod's name and the reading of a finished
// Pod are written here once. It imports the At's API and apimachinery
// only: nothing of controller-runtime, so the floor's binary stays
// client-go's.
package atrecord

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// The same label, finalizer, condition types and reasons as the library's At.
const (
	AtUIDLabel          = "cnat.reconcilekit.dev/at-uid"
	PodCleanupFinalizer = "cnat.reconcilekit.dev/pod-cleanup"

	TypeReady       = "Ready"
	TypeReconciling = "Reconciling"
	TypeStalled     = "Stalled"

	ReasonScheduled        = "Scheduled"
	ReasonPodRunning       = "PodRunning"
	ReasonCommandSucceeded = "CommandSucceeded"
	ReasonCommandFailed    = "CommandFailed"
	ReasonPodDeleted       = "PodDeleted"
	ReasonInvalidSchedule  = "InvalidSchedule"
)

// FirstStatusWithin is how soon after its creation an At must fall due for
// its PENDING status to be skipped (the library At's value).
const FirstStatusWithin = 10 * time.Second

// State is how far along an At is, for its conditions.
type State struct {
	InProgress bool
	// Ready is true when the command succeeded; otherwise a DONE At stalled.
	Ready           bool
	Reason, Message string
}

// StateOf is the At's phase in terms of its conditions.
func StateOf(at *atv1.At) State {
	switch at.Status.Phase {
	case atv1.PhaseRunning:
		return State{InProgress: true, Reason: ReasonPodRunning, Message: fmt.Sprintf("pod %s runs the command", at.Status.PodName)}
	case atv1.PhaseDone:
		if at.Status.Outcome == atv1.OutcomeSucceeded {
			return State{Ready: true, Reason: ReasonCommandSucceeded, Message: fmt.Sprintf("pod %s ran the command successfully", at.Status.PodName)}
		}
		msg := fmt.Sprintf("pod %s failed or was deleted before it finished", at.Status.PodName)
		if at.Status.ExitCode != nil {
			msg = fmt.Sprintf("pod %s failed with exit code %d", at.Status.PodName, *at.Status.ExitCode)
		}
		return State{Reason: ReasonCommandFailed, Message: msg}
	}
	return State{InProgress: true, Reason: ReasonScheduled, Message: "the command runs at " + at.Spec.Schedule}
}

// SetConditions writes the kstatus conditions of s, a transition at now:
// Reconciling and Stalled only while True, Ready always.
func SetConditions(at *atv1.At, s State, now time.Time) {
	set := func(t string, st metav1.ConditionStatus) {
		meta.SetStatusCondition(&at.Status.Conditions, metav1.Condition{Type: t, Status: st, Reason: s.Reason,
			Message: s.Message, ObservedGeneration: at.Generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))})
	}
	switch {
	case s.InProgress:
		set(TypeReconciling, metav1.ConditionTrue)
		set(TypeReady, metav1.ConditionUnknown)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeStalled)
	case s.Ready:
		set(TypeReady, metav1.ConditionTrue)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeReconciling)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeStalled)
	default:
		set(TypeStalled, metav1.ConditionTrue)
		set(TypeReady, metav1.ConditionFalse)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeReconciling)
	}
}

// Summarize names the True kstatus condition and its reason and message,
// "" when none is True.
func Summarize(at *atv1.At) string {
	for _, t := range []string{TypeStalled, TypeReconciling, TypeReady} {
		if c := meta.FindStatusCondition(at.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return t + "\x00" + c.Reason + "\x00" + c.Message
		}
	}
	return ""
}

// FirstStatusCanWait reports whether a new At's first, in-progress status
// may wait for a requeue after this long, moments away, at now.
func FirstStatusCanWait(at *atv1.At, after time.Duration, now time.Time) bool {
	age := now.Sub(at.CreationTimestamp.Time)
	return after > 0 && age >= 0 && age < FirstStatusWithin && after < FirstStatusWithin-age
}

// Observe moves a RUNNING At to DONE when its Pod has finished.
func Observe(at *atv1.At, pod *corev1.Pod) {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		at.Status.Outcome = atv1.OutcomeSucceeded
	case corev1.PodFailed:
		at.Status.Outcome = atv1.OutcomeFailed
	default:
		return
	}
	at.Status.Phase = atv1.PhaseDone
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			code := t.ExitCode
			at.Status.ExitCode = &code
			break
		}
	}
}

// PodName is the At's one Pod, named as the library's At names it.
func PodName(at *atv1.At) string {
	name := at.Name
	if len(name) > 52 {
		name = strings.TrimRight(name[:52], ".-")
	}
	uid := string(at.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return name + "-" + uid
}
