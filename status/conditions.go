package status

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// maxConditionMessage is the longest condition message, in bytes, that the
// API server accepts (the limit declared on metav1.Condition).
// [SetCondition] shortens longer messages to it, at a UTF-8 boundary, so that
// one huge error cannot make every status write fail validation.
const maxConditionMessage = 32768

// Getter is an object that exposes its status conditions.
type Getter interface {
	GetConditions() []metav1.Condition
}

// Setter is an object whose status conditions can be read and replaced.
type Setter interface {
	Getter
	SetConditions([]metav1.Condition)
}

// ObservedGenerationSetter is an object with a status.observedGeneration
// field. [ObserveGeneration] sets it to metadata.generation; the summary
// helpers ([MarkReady], [MarkReconciling], [MarkStalled]) set conditions
// only.
type ObservedGenerationSetter interface {
	GetObservedGeneration() int64
	SetObservedGeneration(int64)
}

// ObservedGenerationObject is what [ObserveGeneration] works on: an
// object with a status.observedGeneration ([ObservedGenerationSetter]) and
// a metadata.generation (every metav1.Object has GetGeneration).
type ObservedGenerationObject interface {
	ObservedGenerationSetter
	GetGeneration() int64
}

// generationGetter is the part of metav1.Object that condition setters use.
type generationGetter interface {
	GetGeneration() int64
}

// Option changes how a condition is set.
type Option func(*options)

type options struct {
	clock clock.PassiveClock
}

func newOptions(opts []Option) options {
	o := options{clock: clock.RealClock{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithClock sets the clock that stamps LastTransitionTime. The default is
// the real clock. A nil clock keeps the default.
func WithClock(c clock.PassiveClock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// now returns the clock's time truncated to whole seconds, the precision the
// API server stores, so that what is in memory equals what a read returns.
func (o options) now() metav1.Time {
	return metav1.NewTime(o.clock.Now().Truncate(time.Second))
}

// SetCondition sets c on obj's conditions with apimachinery's
// meta.SetStatusCondition, matching by Type, and reports whether anything
// changed.
//
// An existing condition of the same type is updated in place, so the order
// of conditions is stable; a new type is appended. LastTransitionTime moves
// only when Status changes: to c.LastTransitionTime when set, otherwise to
// the clock's now ([WithClock]). A change of Reason, Message or
// ObservedGeneration alone keeps the previous LastTransitionTime. Times are
// truncated to whole seconds, the precision the API server stores, and
// messages longer than the API server accepts (32768 bytes) are shortened
// at a UTF-8 boundary.
//
// A condition states what was observed of one generation of the object: when
// c.ObservedGeneration is zero and obj has a metadata.generation (it is a
// metav1.Object), the condition records that generation. SetCondition writes
// nothing else: status.observedGeneration is [ObserveGeneration]'s job.
//
// SetCondition does not validate c: the API server rejects an empty Reason or
// Status when the status is written.
func SetCondition(obj Setter, c metav1.Condition, opts ...Option) (changed bool) {
	if c.ObservedGeneration == 0 {
		if g, ok := obj.(generationGetter); ok {
			c.ObservedGeneration = g.GetGeneration()
		}
	}
	c.Message = truncateMessage(c.Message)
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = newOptions(opts).now()
	} else {
		c.LastTransitionTime = metav1.NewTime(c.LastTransitionTime.Truncate(time.Second))
	}
	conditions := obj.GetConditions()
	if !meta.SetStatusCondition(&conditions, c) {
		return false
	}
	obj.SetConditions(conditions)
	return true
}

func truncateMessage(m string) string {
	if len(m) <= maxConditionMessage {
		return m
	}
	cut := maxConditionMessage
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

// FindCondition returns obj's condition of type t and whether there is one.
// The result is a copy: changing it changes nothing in obj.
func FindCondition(obj Getter, t string) (metav1.Condition, bool) {
	if c := meta.FindStatusCondition(obj.GetConditions(), t); c != nil {
		return *c, true
	}
	return metav1.Condition{}, false
}

// RemoveCondition removes obj's condition of type t and reports whether
// there was one. The order of the others is kept.
func RemoveCondition(obj Setter, t string) (removed bool) {
	conditions := obj.GetConditions()
	if meta.FindStatusCondition(conditions, t) == nil {
		return false
	}
	meta.RemoveStatusCondition(&conditions, t)
	if len(conditions) == 0 {
		conditions = nil
	}
	obj.SetConditions(conditions)
	return true
}

// IsTrue reports whether obj has a condition of type t with status True.
func IsTrue(obj Getter, t string) bool {
	return meta.IsStatusConditionTrue(obj.GetConditions(), t)
}

// IsFalse reports whether obj has a condition of type t with status False.
func IsFalse(obj Getter, t string) bool {
	return meta.IsStatusConditionFalse(obj.GetConditions(), t)
}

// IsUnknown reports whether obj's condition of type t is Unknown or absent:
// a missing condition is one nobody knows the status of yet.
func IsUnknown(obj Getter, t string) bool {
	return !IsTrue(obj, t) && !IsFalse(obj, t)
}
