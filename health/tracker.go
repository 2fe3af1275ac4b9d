package health

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// DefaultMaxEntries is how many objects a [Tracker] remembers at most when
// its MaxEntries is zero.
const DefaultMaxEntries = 100_000

// ErrInvalidTracker is wrapped by the error of a [Tracker] set up wrong
// ([Tracker.Validate]).
var ErrInvalidTracker = errors.New("health: invalid Tracker")

// Tracker says the health of objects, as [Of] does, and never from a copy
// older than one it was shown before: it remembers, per object (by UID),
// the newest metadata.generation it has seen, and an object shown with an
// older generation is InProgress (reason CacheBehind), whatever its status
// says.
//
// That is what keeps a parent from being Ready on a stale status. A
// reconciler writes a child (drift.Writer's Ensure), and the object the
// write returned, which Ensure leaves in its argument, carries the new
// generation: give that object to the Tracker. The informer cache may hand
// the next reconcile a copy from before the write, whose status, complete
// for the old generation, would say Current; the Tracker says InProgress
// until the cache has the generation written, and the status describes it.
// The watch event of that catch-up wakes the parent again (see
// [Predicate]): nothing polls.
//
// Memory: an object is remembered only while it is not Current at the
// newest generation seen; once it is, it is forgotten. So a Tracker holds
// the children that are rolling out, or stuck, and no more than MaxEntries.
//
// The zero value is ready to use. A Tracker is safe for concurrent use;
// share one per controller (a field of the reconciler). It sends no
// request.
type Tracker struct {
	// MaxEntries bounds how many objects are remembered; when it is
	// reached, an arbitrary one is forgotten for each new one (a forgotten
	// object is judged by its own status alone, as by Of). Zero means
	// [DefaultMaxEntries] (100,000, a few MB).
	MaxEntries int

	validOnce sync.Once
	invalid   error

	mu     sync.Mutex
	newest map[types.UID]int64
}

// Validate reports a Tracker set up wrong: a negative MaxEntries (zero
// means the default). The error wraps [ErrInvalidTracker]. The Tracker
// calls it on first use, and every call of an invalid Tracker returns its
// error, classed permanent; call it while setting up to fail early.
func (t *Tracker) Validate() error {
	switch {
	case t == nil:
		return fmt.Errorf("%w: nil", ErrInvalidTracker)
	case t.MaxEntries < 0:
		return fmt.Errorf("%w: MaxEntries is negative (%d); zero means DefaultMaxEntries", ErrInvalidTracker, t.MaxEntries)
	}
	return nil
}

func (t *Tracker) valid() error {
	if t == nil {
		return errors.Permanent(t.Validate())
	}
	t.validOnce.Do(func() {
		if err := t.Validate(); err != nil {
			t.invalid = errors.Permanent(err)
		}
	})
	return t.invalid
}

// Len returns how many objects the Tracker remembers now.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.newest)
}

// reasonCacheBehind is the reason of an object older than one seen before.
const reasonCacheBehind = "CacheBehind"

// Of returns obj's health as [Of] says it, except that an object with an
// older metadata.generation than the newest the Tracker has seen of it is
// InProgress, reason CacheBehind. An object without a UID or a generation
// (one not read from the API server) is judged by Of alone.
func (t *Tracker) Of(obj client.Object) (Health, error) {
	if err := t.valid(); err != nil {
		return Health{}, err
	}
	h, err := Of(obj)
	if err != nil {
		return h, err
	}
	uid, gen := obj.GetUID(), obj.GetGeneration()
	if uid == "" || gen == 0 {
		return h, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	newest, known := t.newest[uid]
	switch {
	case gen < newest:
		h.Status, h.Reason = InProgress, reasonCacheBehind
		h.Message = fmt.Sprintf("generation %d was written, the cache still holds generation %d", newest, gen)
	case h.Status == Current:
		// Caught up: the cache never goes back to an older copy.
		delete(t.newest, uid)
	case !known:
		if t.newest == nil {
			t.newest = map[types.UID]int64{}
		}
		limit := t.MaxEntries
		if limit == 0 {
			limit = DefaultMaxEntries
		}
		for k := range t.newest {
			if len(t.newest) < limit {
				break
			}
			delete(t.newest, k)
		}
		t.newest[uid] = gen
	case gen > newest:
		t.newest[uid] = gen
	}
	return h, nil
}

// Summarize returns the health of the worst of objs, as [Summarize] says
// it of their Health by [Tracker.Of]: the one call that tells a reconciler
// what its parent's conditions say of its children. It returns the first
// error of Of, and no Health, when an object is unreadable.
func (t *Tracker) Summarize(objs ...client.Object) (Health, error) {
	hs := make([]Health, 0, len(objs))
	for _, obj := range objs {
		h, err := t.Of(obj)
		if err != nil {
			return Health{}, err
		}
		hs = append(hs, h)
	}
	return Summarize(hs...), nil
}
