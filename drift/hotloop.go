package drift

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/errors"
)

// Defaults of a zero [HotLoopDetector].
const (
	defaultHotLoopThreshold  = 5
	defaultHotLoopWindow     = 2 * time.Minute
	defaultHotLoopHoldOff    = 5 * time.Minute
	defaultHotLoopMaxObjects = 4096
)

// ReasonHotLoop is the reason of the Warning event a [HotLoopDetector]
// records.
const ReasonHotLoop = "HotLoop"

// ErrHotLoop is matched (errors.Is) by every [*HotLoopError].
var ErrHotLoop = errors.New("drift: hot loop")

// HotLoopError says Ensure did not patch an object because the same fields
// kept drifting back: another controller or a mutating webhook is reverting
// them. It states its own class for package errors: throttled, with the
// hold-off left as its delay, so requeue.Policy waits it out instead of
// retrying with backoff and an error log; its condition reason is
// [ReasonHotLoop].
type HotLoopError struct {
	// Object names the object as "Kind namespace/name".
	Object string
	// Paths are the fields that keep drifting.
	Paths []string
	// Until is when the detector lets patches through again.
	Until time.Time
	// Left is how long the hold-off had left when the write was held back.
	Left time.Duration
}

// Error implements error.
func (e *HotLoopError) Error() string {
	return fmt.Sprintf("drift: hot loop on %s: %s keep drifting back; not patching until %s",
		e.Object, strings.Join(e.Paths, ", "), e.Until.UTC().Format(time.RFC3339))
}

// Unwrap returns [ErrHotLoop].
func (e *HotLoopError) Unwrap() error { return ErrHotLoop }

// Class is [errors.ClassThrottled]: the write waits out the hold-off.
func (e *HotLoopError) Class() errors.Class { return errors.ClassThrottled }

// RetryAfter is the delay [errors.Classify] reports: the hold-off left.
func (e *HotLoopError) RetryAfter() time.Duration { return e.Left }

// Reason is [ReasonHotLoop], the condition reason [errors.Reason] reports.
func (e *HotLoopError) Reason() string { return ReasonHotLoop }

// HotLoopDetector notices an object whose same fields drift back to the same
// other value again and again, so a [Writer] can stop fighting and say so.
// The zero value works with the defaults; share one detector per controller
// (it is safe for concurrent use) and set it as the Writer's HotLoops.
//
// A drift is "the same" when the drifted paths and the desired values at
// them are the same, so a user changing desired several times in a row is
// not a hot loop. Threshold such drifts of one object within Window trip the
// detector: the Threshold-th is not patched, nor is any drift of the object
// for HoldOff; a Warning event (reason [ReasonHotLoop]) naming the fields is
// recorded and one log line written per trip. Memory is bounded by
// MaxObjects: the least recently seen object is forgotten first. A field
// set below zero, or a Threshold of 1 (which would hold back every first
// drift, so nothing would ever be written), is refused by
// [HotLoopDetector.Validate].
type HotLoopDetector struct {
	// Threshold is how many same drifts within Window trip the detector.
	// Zero means 5.
	Threshold int
	// Window is how close together the drifts must be. Zero means 2
	// minutes.
	Window time.Duration
	// HoldOff is how long an object is left alone once tripped. Zero means
	// 5 minutes.
	HoldOff time.Duration
	// MaxObjects bounds how many objects are remembered. Zero means 4096.
	MaxObjects int
	// Clock tells the time. Nil: the Clock of the Writer that reports to
	// the detector, else the real clock.
	Clock clock.PassiveClock
	// Recorder, if set, receives the Warning event (events API).
	Recorder events.EventRecorder

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *hotEntry, most recent first
}

type hotEntry struct {
	key         string
	fingerprint uint64
	count       int
	first       time.Time
	until       time.Time
}

// ErrInvalidHotLoopDetector is matched (errors.Is) by the error of
// [HotLoopDetector.Validate].
var ErrInvalidHotLoopDetector = errors.New("drift: invalid hot-loop detector")

// Validate reports a field set to a value the detector cannot work with: a
// negative Threshold, Window, HoldOff or MaxObjects, or a Threshold of 1.
// A [Writer] calls it on every call that reports to the detector and
// returns its error, classed permanent, instead of writing.
func (h *HotLoopDetector) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidHotLoopDetector}, args...)...))
	}
	if h.Threshold < 0 || h.Threshold == 1 {
		bad("Threshold is %d; want 0 (the default, %d) or at least 2", h.Threshold, defaultHotLoopThreshold)
	}
	if h.Window < 0 {
		bad("Window is %s; want 0 (the default, %s) or more", h.Window, defaultHotLoopWindow)
	}
	if h.HoldOff < 0 {
		bad("HoldOff is %s; want 0 (the default, %s) or more", h.HoldOff, defaultHotLoopHoldOff)
	}
	if h.MaxObjects < 0 {
		bad("MaxObjects is %d; want 0 (the default, %d) or more", h.MaxObjects, defaultHotLoopMaxObjects)
	}
	return errors.Join(errs...)
}

// clockOr returns the detector's clock, else fallback, else the real clock.
func (h *HotLoopDetector) clockOr(fallback clock.PassiveClock) clock.PassiveClock {
	switch {
	case h.Clock != nil:
		return h.Clock
	case fallback != nil:
		return fallback
	}
	return clock.RealClock{}
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// observe records one drift of the object at key at the time now and
// reports whether to hold the write back, until when, and whether this
// drift tripped it.
func (h *HotLoopDetector) observe(key string, fingerprint uint64, now time.Time) (until time.Time, hold, tripped bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[string]*list.Element{}
	}
	el, ok := h.entries[key]
	if !ok {
		for h.lru.Len() >= orDefault(h.MaxObjects, defaultHotLoopMaxObjects) {
			oldest := h.lru.Back()
			delete(h.entries, oldest.Value.(*hotEntry).key)
			h.lru.Remove(oldest)
		}
		el = h.lru.PushFront(&hotEntry{key: key})
		h.entries[key] = el
	}
	h.lru.MoveToFront(el)
	e := el.Value.(*hotEntry)
	if now.Before(e.until) {
		return e.until, true, false
	}
	if !e.until.IsZero() {
		*e = hotEntry{key: key}
	}
	if e.count > 0 && e.fingerprint == fingerprint && now.Sub(e.first) <= orDefault(h.Window, defaultHotLoopWindow) {
		e.count++
	} else {
		e.fingerprint, e.first, e.count = fingerprint, now, 1
	}
	if e.count >= orDefault(h.Threshold, defaultHotLoopThreshold) {
		e.until = now.Add(orDefault(h.HoldOff, defaultHotLoopHoldOff))
		e.count = 0
		return e.until, true, true
	}
	return time.Time{}, false, false
}

// checkHotLoop reports a drift to the Writer's HotLoops and returns a
// *HotLoopError when the write must be held back.
func (w *Writer) checkHotLoop(ctx context.Context, live client.Object, cmpn compare.Comparison) error {
	h := w.HotLoops
	if h == nil {
		return nil
	}
	c := w.client
	kind := fmt.Sprintf("%T", live)
	if gvk, err := apiutil.GVKForObject(live, c.Scheme()); err == nil {
		kind = gvk.GroupKind().String()
	}
	name := kind + " " + client.ObjectKeyFromObject(live).String()
	now := h.clockOr(w.Clock).Now()
	until, hold, tripped := h.observe(name, cmpn.Fingerprint(), now)
	if !hold {
		return nil
	}
	herr := &HotLoopError{Object: name, Paths: cmpn.Paths, Until: until, Left: until.Sub(now)}
	if tripped {
		window := orDefault(h.Window, defaultHotLoopWindow)
		holdOff := orDefault(h.HoldOff, defaultHotLoopHoldOff)
		fields := strings.Join(cmpn.Paths, ", ")
		const note = "%s drifted back %d times within %s: another controller or a mutating webhook reverts them; not patching for %s"
		threshold := orDefault(h.Threshold, defaultHotLoopThreshold)
		if h.Recorder != nil {
			// A copy: live may be the cache's own object.
			h.Recorder.Eventf(live.DeepCopyObject(), nil, corev1.EventTypeWarning, ReasonHotLoop, "Patch", note, fields, threshold, window, holdOff)
		}
		log.FromContext(ctx).Info("hot loop: not patching", "object", name, "paths", cmpn.Paths, "until", until, "diff", cmpn.Report)
	}
	return herr
}
