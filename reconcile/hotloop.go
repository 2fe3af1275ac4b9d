package reconcile

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Defaults of a zero [HotLoopDetector].
const (
	DefaultHotLoopThreshold  = 5
	DefaultHotLoopWindow     = 2 * time.Minute
	DefaultHotLoopHoldOff    = 5 * time.Minute
	DefaultHotLoopMaxObjects = 4096
)

// HotLoopReason is the reason of the Warning event a [HotLoopDetector]
// records.
const HotLoopReason = "HotLoop"

// ErrHotLoop is matched (errors.Is) by every [*HotLoopError].
var ErrHotLoop = errors.New("reconcile: hot loop")

// HotLoopError says Ensure did not patch an object because the same fields
// kept drifting back: another controller or a mutating webhook is reverting
// them.
type HotLoopError struct {
	// Object names the object as "Kind namespace/name".
	Object string
	// Paths are the fields that keep drifting.
	Paths []string
	// Until is when the detector lets patches through again.
	Until time.Time
}

// Error implements error.
func (e *HotLoopError) Error() string {
	return fmt.Sprintf("reconcile: hot loop on %s: %s keep drifting back; not patching until %s",
		e.Object, strings.Join(e.Paths, ", "), e.Until.UTC().Format(time.RFC3339))
}

// Unwrap returns [ErrHotLoop].
func (e *HotLoopError) Unwrap() error { return ErrHotLoop }

// HotLoopDetector notices an object whose same fields drift back to the same
// other value again and again, so Ensure can stop fighting and say so. The
// zero value works with the defaults; share one detector per controller
// (it is safe for concurrent use) and pass it with [DetectHotLoops].
//
// A drift is "the same" when the drifted paths and the desired values at
// them are the same, so a user changing desired several times in a row is
// not a hot loop. Threshold such drifts of one object within Window trip the
// detector: the Threshold-th is not patched, nor is any drift of the object
// for HoldOff; a Warning event (reason [HotLoopReason]) naming the fields is
// recorded and one log line written per trip. Memory is bounded by
// MaxObjects: the least recently seen object is forgotten first.
type HotLoopDetector struct {
	// Threshold is how many same drifts within Window trip the detector.
	// Default DefaultHotLoopThreshold.
	Threshold int
	// Window is how close together the drifts must be. Default
	// DefaultHotLoopWindow.
	Window time.Duration
	// HoldOff is how long an object is left alone once tripped. Default
	// DefaultHotLoopHoldOff.
	HoldOff time.Duration
	// MaxObjects bounds how many objects are remembered. Default
	// DefaultHotLoopMaxObjects.
	MaxObjects int
	// Clock tells the time. Default the real clock.
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

func (h *HotLoopDetector) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// observe records one drift of the object at key and reports whether to
// hold the write back, until when, and whether this drift tripped it.
func (h *HotLoopDetector) observe(key string, fingerprint uint64) (until time.Time, hold, tripped bool) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[string]*list.Element{}
	}
	el, ok := h.entries[key]
	if !ok {
		for h.lru.Len() >= orDefault(h.MaxObjects, DefaultHotLoopMaxObjects) {
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
	if e.count > 0 && e.fingerprint == fingerprint && now.Sub(e.first) <= orDefault(h.Window, DefaultHotLoopWindow) {
		e.count++
	} else {
		e.fingerprint, e.first, e.count = fingerprint, now, 1
	}
	if e.count >= orDefault(h.Threshold, DefaultHotLoopThreshold) {
		e.until = now.Add(orDefault(h.HoldOff, DefaultHotLoopHoldOff))
		e.count = 0
		return e.until, true, true
	}
	return time.Time{}, false, false
}

// fingerprint identifies a drift by its paths and desired values.
func fingerprint(c Comparison) uint64 {
	h := fnv.New64a()
	for _, d := range c.drifts {
		h.Write([]byte(d.path))
		h.Write([]byte{0})
		b, err := json.Marshal(d.desired)
		if err != nil {
			b = fmt.Appendf(nil, "%v", d.desired)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// checkHotLoop reports a drift to the configured detector and returns a
// *HotLoopError when the write must be held back.
func checkHotLoop(ctx context.Context, c client.Client, cfg *ensureConfig, live client.Object, cmpn Comparison) error {
	h := cfg.hotLoops
	if h == nil {
		return nil
	}
	kind := fmt.Sprintf("%T", live)
	if gvk, err := apiutil.GVKForObject(live, c.Scheme()); err == nil {
		kind = gvk.GroupKind().String()
	}
	name := kind + " " + client.ObjectKeyFromObject(live).String()
	until, hold, tripped := h.observe(name, fingerprint(cmpn))
	if !hold {
		return nil
	}
	herr := &HotLoopError{Object: name, Paths: cmpn.Paths, Until: until}
	if tripped {
		window := orDefault(h.Window, DefaultHotLoopWindow)
		holdOff := orDefault(h.HoldOff, DefaultHotLoopHoldOff)
		fields := strings.Join(cmpn.Paths, ", ")
		const note = "%s drifted back %d times within %s: another controller or a mutating webhook reverts them; not patching for %s"
		threshold := orDefault(h.Threshold, DefaultHotLoopThreshold)
		if h.Recorder != nil {
			h.Recorder.Eventf(live, nil, corev1.EventTypeWarning, HotLoopReason, "Patch", note, fields, threshold, window, holdOff)
		}
		log.FromContext(ctx).Info("hot loop: not patching", "object", name, "paths", cmpn.Paths, "until", until, "diff", cmpn.Report)
	}
	return herr
}
