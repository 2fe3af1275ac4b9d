package suspend

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/status"
)

// Annotation suspends the reconciliation of the object it is set on, of any
// type: "true" suspends, "false" does not, and a value strconv.ParseBool
// cannot read suspends too (whoever set it meant to stop the controller, and
// a typo must not let it run on; the condition's message shows the value).
//
//	kubectl annotate widget/w reconcilekit.io/suspend=true
//	kubectl annotate widget/w reconcilekit.io/suspend-
//
// Users type it, during an incident: it is short, in the library's domain.
// (The library's own marks, such as ownership.LinkLabel, which only the
// library writes, carry their package's subdomain.) Flux has no such
// annotation to share: its kinds are suspended by spec.suspend, which
// [Getter] serves.
const Annotation = "reconcilekit.io/suspend"

// Getter is an API type with a field of its own that suspends it, such as
// Flux's spec.suspend. Implement it next to the type:
//
//	// GetSuspend returns spec.suspend.
//	func (w *Website) GetSuspend() bool { return w.Spec.Suspend }
type Getter interface {
	GetSuspend() bool
}

// Condition type and reason of a suspended object.
const (
	// TypeSuspended is True while the object is suspended. It is removed
	// when the object resumes.
	TypeSuspended = "Suspended"
	// ReasonSuspended is the reason of the Suspended condition, and of the
	// Ready=Unknown condition [Mark] sets on an object suspended before it
	// had a Ready condition.
	ReasonSuspended = "Suspended"
)

// Requested reports whether the users of obj suspended its reconciliation,
// and how: its [Annotation] says so, or obj is a [Getter] whose
// GetSuspend is true. why is the message of the Suspended condition
// ("spec.suspend is true", "annotation reconcilekit.io/suspend is "true"").
func Requested(obj metav1.Object) (why string, suspended bool) {
	if g, ok := obj.(Getter); ok && g.GetSuspend() {
		return "spec.suspend is true", true
	}
	v, ok := obj.GetAnnotations()[Annotation]
	if !ok {
		return "", false
	}
	b, err := strconv.ParseBool(v)
	switch {
	case err != nil:
		return fmt.Sprintf("annotation %s is %q, not a boolean: suspended until it is false or removed", Annotation, v), true
	case b:
		return fmt.Sprintf("annotation %s is %q", Annotation, v), true
	}
	return "", false
}

// Mark records on obj's conditions that obj is suspended: Suspended=True
// with [ReasonSuspended] and message (usually why from [Requested]). It
// leaves Ready, Reconciling and Stalled as the last reconcile decided them:
// nothing new is known of a suspended object, so kstatus reads it as it was
// left (Current, InProgress or Failed). An object suspended before it had a
// Ready condition gets Ready=Unknown with [ReasonSuspended], so that kstatus
// reads it as InProgress rather than as a resource without conditions
// (Current), and kubectl wait --for=condition=Ready keeps waiting. It
// reports whether anything changed; like every condition setter it writes
// conditions only, never status.observedGeneration.
func Mark(obj status.Setter, message string, opts ...status.Option) (changed bool) {
	changed = status.SetCondition(obj, metav1.Condition{Type: TypeSuspended, Status: metav1.ConditionTrue, Reason: ReasonSuspended, Message: message}, opts...)
	if _, ok := status.FindCondition(obj, status.TypeReady); !ok {
		changed = status.SetCondition(obj, metav1.Condition{Type: status.TypeReady, Status: metav1.ConditionUnknown, Reason: ReasonSuspended, Message: message}, opts...) || changed
	}
	return changed
}

// Clear records that obj is no longer suspended: it removes the Suspended
// condition, and the Ready=Unknown condition [Mark] set on an object
// suspended before it had one. It reports whether anything changed. The
// reconcile that resumes the object sets the summary conditions anew.
func Clear(obj status.Setter) (changed bool) {
	changed = status.RemoveCondition(obj, TypeSuspended)
	if c, ok := status.FindCondition(obj, status.TypeReady); ok && c.Status == metav1.ConditionUnknown && c.Reason == ReasonSuspended {
		changed = status.RemoveCondition(obj, status.TypeReady) || changed
	}
	return changed
}
