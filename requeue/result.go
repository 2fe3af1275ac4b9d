package requeue

import (
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MinDelay is the RequeueAfter used to mean "as soon as possible": the
// smallest positive duration. controller-runtime reads a zero RequeueAfter as
// "do not requeue", so "now" has to be a positive delay.
const MinDelay = time.Nanosecond

// After returns a Result that requeues after d. A d of zero or less means
// "as soon as possible" and requeues after [MinDelay], never "no requeue".
func After(d time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: max(d, MinDelay)}
}

// Option changes how [At] tells the time.
type Option func(*options)

type options struct {
	clock clock.PassiveClock
}

// WithClock makes [At] tell the time with c instead of the real clock. A nil
// c keeps the real clock.
func WithClock(c clock.PassiveClock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// At returns a Result that requeues when the clock reaches t: the real clock,
// or the one given with [WithClock]. A t that is now or in the past
// (including the zero time) requeues after [MinDelay].
//
// controller-runtime waits on its own real clock, so with a fake clock the
// delay is t minus the fake now, counted in real time.
func At(t time.Time, opts ...Option) reconcile.Result {
	o := options{clock: clock.RealClock{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return After(t.Sub(o.clock.Now()))
}

// Every returns a Result for a periodic resync every d, spread by a random
// amount in [-jitter, +jitter] so that objects created together do not all
// resync at the same instant. A jitter of zero or less gives exactly d; a
// jitter above d is treated as d (the delay stays within (0, 2d]). A d of
// zero or less returns the zero Result: no periodic resync. Every is safe for
// concurrent use.
func Every(d, jitter time.Duration) reconcile.Result {
	if d <= 0 {
		return reconcile.Result{}
	}
	jitter = min(max(jitter, 0), d)
	if jitter > 0 {
		// math/rand/v2's top-level functions are safe for concurrent use.
		d += rand.N(2*jitter+1) - jitter
	}
	return After(d)
}

// Merge combines the Results of several steps of one reconcile into the one
// to return: the soonest positive RequeueAfter wins; zero Results (and
// non-positive RequeueAfters) are neutral; the deprecated Requeue flag is
// kept if any input set it; Priority is the highest one set. The result does
// not depend on the order of the inputs. Merge() is the zero Result.
func Merge(results ...reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
		//nolint:staticcheck // Requeue is deprecated; Merge must not drop a caller's request.
		out.Requeue = out.Requeue || r.Requeue
		if r.Priority != nil && (out.Priority == nil || *r.Priority > *out.Priority) {
			p := *r.Priority
			out.Priority = &p
		}
	}
	return out
}
