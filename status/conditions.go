package status

import (
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// MaxMessageLength is the longest condition message, in bytes, that the API
// server accepts (the limit declared on metav1.Condition). [SetCondition]
// shortens longer messages to it, at a UTF-8 boundary, so that one huge error
// cannot make every status write fail validation.
const MaxMessageLength = 32768

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
// field. The summary helpers ([MarkReady], [MarkReconciling], [MarkStalled])
// keep it equal to metadata.generation when the object implements it.
type ObservedGenerationSetter interface {
	GetObservedGeneration() int64
	SetObservedGeneration(int64)
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

// SetCondition sets c in conditions, matching by Type, and reports whether
// anything changed.
//
// An existing condition of the same type is updated in place, so the order
// of conditions is stable; a new type is appended. LastTransitionTime moves
// only when Status changes: to c.LastTransitionTime when set, otherwise to
// the clock's now. A change of Reason, Message or ObservedGeneration alone
// keeps the previous LastTransitionTime. Times are truncated to whole seconds
// and messages longer than [MaxMessageLength] are shortened.
//
// SetCondition does not validate c: the API server rejects an empty Reason or
// Status when the status is written. A nil conditions pointer changes nothing.
func SetCondition(conditions *[]metav1.Condition, c metav1.Condition, opts ...Option) (changed bool) {
	if conditions == nil {
		return false
	}
	c.Message = truncateMessage(c.Message)
	for i := range *conditions {
		existing := &(*conditions)[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status != c.Status {
			existing.Status = c.Status
			existing.LastTransitionTime = transitionTime(c, opts)
			changed = true
		}
		if existing.Reason != c.Reason {
			existing.Reason = c.Reason
			changed = true
		}
		if existing.Message != c.Message {
			existing.Message = c.Message
			changed = true
		}
		if existing.ObservedGeneration != c.ObservedGeneration {
			existing.ObservedGeneration = c.ObservedGeneration
			changed = true
		}
		return changed
	}
	c.LastTransitionTime = transitionTime(c, opts)
	*conditions = append(*conditions, c)
	return true
}

func transitionTime(c metav1.Condition, opts []Option) metav1.Time {
	if !c.LastTransitionTime.IsZero() {
		return metav1.NewTime(c.LastTransitionTime.Truncate(time.Second))
	}
	return newOptions(opts).now()
}

func truncateMessage(m string) string {
	if len(m) <= MaxMessageLength {
		return m
	}
	cut := MaxMessageLength
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

// FindCondition returns the condition of type t in conditions and whether
// there is one. The result is a copy: changing it changes nothing in
// conditions.
func FindCondition(conditions []metav1.Condition, t string) (metav1.Condition, bool) {
	for _, c := range conditions {
		if c.Type == t {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// RemoveCondition removes every condition of type t from conditions and
// reports whether there was one. The order of the others is kept.
func RemoveCondition(conditions *[]metav1.Condition, t string) (removed bool) {
	if conditions == nil {
		return false
	}
	n := 0
	for _, c := range *conditions {
		if c.Type == t {
			removed = true
			continue
		}
		(*conditions)[n] = c
		n++
	}
	if !removed {
		return false
	}
	clear((*conditions)[n:])
	*conditions = (*conditions)[:n]
	if n == 0 {
		*conditions = nil
	}
	return true
}

// Set sets c on obj's conditions as [SetCondition] does and reports whether
// anything changed. When c.ObservedGeneration is zero and obj has a
// metadata.generation (it is a metav1.Object), the condition records that
// generation: it was computed from the object as it is now.
func Set(obj Setter, c metav1.Condition, opts ...Option) (changed bool) {
	if c.ObservedGeneration == 0 {
		if g, ok := obj.(generationGetter); ok {
			c.ObservedGeneration = g.GetGeneration()
		}
	}
	conditions := obj.GetConditions()
	if !SetCondition(&conditions, c, opts...) {
		return false
	}
	obj.SetConditions(conditions)
	return true
}

// Get returns obj's condition of type t and whether there is one. The result
// is a copy.
func Get(obj Getter, t string) (metav1.Condition, bool) {
	return FindCondition(obj.GetConditions(), t)
}

// Remove removes obj's condition of type t and reports whether there was one.
func Remove(obj Setter, t string) (removed bool) {
	conditions := obj.GetConditions()
	if !RemoveCondition(&conditions, t) {
		return false
	}
	obj.SetConditions(conditions)
	return true
}

// IsTrue reports whether obj has a condition of type t with status True.
func IsTrue(obj Getter, t string) bool {
	c, ok := Get(obj, t)
	return ok && c.Status == metav1.ConditionTrue
}

// IsFalse reports whether obj has a condition of type t with status False.
func IsFalse(obj Getter, t string) bool {
	c, ok := Get(obj, t)
	return ok && c.Status == metav1.ConditionFalse
}

// IsUnknown reports whether obj's condition of type t is Unknown or absent:
// a missing condition is one nobody knows the status of yet.
func IsUnknown(obj Getter, t string) bool {
	c, ok := Get(obj, t)
	return !ok || (c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse)
}
