package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheDelay makes an informer cache lag behind the API server on purpose:
// every watch event reaches the cache Delay after the API server sent it,
// in the order it was sent. A controller's cached client then reads objects
// older than its own last write, as it does in production under load, so a
// test can prove that a reconciler neither creates a second child, nor
// regresses a status, nor writes on a stale copy.
//
// Give a manager the delayed cache through [CacheDelay.CacheOptions]:
//
//	delay := &reconciletest.CacheDelay{Delay: 2 * time.Second}
//	opts, err := delay.CacheOptions(cache.Options{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// The initial state of a watch (the events a watch-list stream sends before
// its initial-events-end bookmark) is delivered at once, so the cache syncs
// without delay; every change after it is delayed. Lists (which client-go
// makes only when it cannot stream, or after a watch failed) are not
// delayed.
//
// Its zero value delivers events at once. It is safe for concurrent use
// and must not be copied after first use; one CacheDelay may serve several
// caches. One with a field set wrong ([CacheDelay.Validate]) delays
// nothing: [CacheDelay.CacheOptions] returns the error, and every list and
// watch through its ListerWatcher fails with it.
type CacheDelay struct {
	// Delay is how long each watch event is held back. Zero delivers
	// events at once; it may not be negative.
	Delay time.Duration
	// Clock times the delay; nil means the real clock. With a
	// testingclock.FakeClock, a held event is delivered only when the
	// test steps the clock by Delay, so a stale read is certain, not
	// likely: write, wait until [CacheDelay.Holds] the written object,
	// read (stale), then step.
	Clock clock.Clock

	mu sync.Mutex
	// held are the events whose delay has not passed, over every watch,
	// by a number of their own.
	held map[uint64]watch.Event
	seq  uint64
}

// ErrInvalidCacheDelay is wrapped by the error of [CacheDelay.Validate].
var ErrInvalidCacheDelay = errors.New("reconciletest: invalid CacheDelay")

// Validate reports a CacheDelay set up wrong: a negative Delay. The error
// wraps [ErrInvalidCacheDelay]. [CacheDelay.CacheOptions] and testenv's
// NewManager return its error; a list or watch through the delay returns
// it too.
func (d *CacheDelay) Validate() error {
	switch {
	case d == nil:
		return fmt.Errorf("%w: nil", ErrInvalidCacheDelay)
	case d.Delay < 0:
		return fmt.Errorf("%w: Delay is negative (%s)", ErrInvalidCacheDelay, d.Delay)
	}
	return nil
}

// Pending returns how many watch events the delay holds now: received from
// the API server, their delay not yet passed.
func (d *CacheDelay) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// Holds reports whether the delay holds an event of obj (same namespace
// and name) at obj's resourceVersion: after a write, pass the object the
// write returned, and wait until Holds is true before stepping a fake clock,
// so that the step releases that event.
func (d *CacheDelay) Holds(obj metav1.Object) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ev := range d.held {
		m, err := meta.Accessor(ev.Object)
		if err == nil && m.GetResourceVersion() == obj.GetResourceVersion() &&
			m.GetName() == obj.GetName() && m.GetNamespace() == obj.GetNamespace() {
			return true
		}
	}
	return false
}

// hold registers an event whose delay starts, and returns its number.
func (d *CacheDelay) hold(ev watch.Event) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[uint64]watch.Event{}
	}
	d.seq++
	d.held[d.seq] = ev
	return d.seq
}

// release forgets a held event: its delay passed, or its watch stopped.
func (d *CacheDelay) release(id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.held, id)
}

// CacheOptions returns base with its NewInformer wrapped, so that every
// informer of a cache built from them (a manager's, through
// ctrl.Options.Cache) lists and watches through
// [CacheDelay.ListerWatcher]. An existing NewInformer is kept and called
// with the wrapped ListerWatcher. A CacheDelay that [CacheDelay.Validate]
// refuses returns its error and base unchanged.
func (d *CacheDelay) CacheOptions(base cache.Options) (cache.Options, error) {
	if err := d.Validate(); err != nil {
		return base, err
	}
	next := base.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	base.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return next(d.ListerWatcher(lw), obj, resync, indexers)
	}
	return base, nil
}

// ListerWatcher returns a ListerWatcher whose watches deliver their events
// Delay late, in order, for informers built with client-go directly.
func (d *CacheDelay) ListerWatcher(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	return &delayedListerWatcher{delay: d, inner: lw, lw: toolscache.ToListerWatcherWithContext(lw)}
}

// delayedListerWatcher lists as the ListerWatcher it wraps, and delays the
// events of its watches.
type delayedListerWatcher struct {
	delay *CacheDelay
	inner toolscache.ListerWatcher
	lw    toolscache.ListerWatcherWithContext
}

var (
	_ toolscache.ListerWatcher            = (*delayedListerWatcher)(nil)
	_ toolscache.ListerWatcherWithContext = (*delayedListerWatcher)(nil)
)

func (l *delayedListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *delayedListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := l.delay.Validate(); err != nil {
		return nil, err
	}
	return l.lw.ListWithContext(ctx, opts)
}

func (l *delayedListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *delayedListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := l.delay.Validate(); err != nil {
		return nil, err
	}
	w, err := l.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	return l.delay.delayWatch(w, initial), nil
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says (client-go's reflector asks, to decide whether to stream lists).
func (l *delayedListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.inner)
}

// heldEvent is a watch event on its way, and the timer that releases it
// (nil: at once) with its number among the delay's held events.
type heldEvent struct {
	event watch.Event
	timer clock.Timer
	id    uint64
}

// delayedWatch delivers the events of inner Delay late. A reader goroutine
// stamps each event with a timer when it arrives; a writer goroutine, the
// only one to send on out, delivers them in order as their timers fire.
type delayedWatch struct {
	delay *CacheDelay
	inner watch.Interface
	out   chan watch.Event

	mu       sync.Mutex
	queue    []heldEvent
	ended    bool          // inner's channel is closed
	dropped  bool          // the writer is gone: nothing more is queued
	arrived  chan struct{} // signals the writer: the queue grew or ended
	stop     chan struct{}
	stopOnce sync.Once
}

func (d *CacheDelay) delayWatch(inner watch.Interface, initial bool) watch.Interface {
	w := &delayedWatch{
		delay:   d,
		inner:   inner,
		out:     make(chan watch.Event),
		arrived: make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	go w.read(initial)
	go w.write()
	return w
}

func (w *delayedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *delayedWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// read queues the events of inner, each with its timer; while initial, the
// events of the watch's initial state pass at once.
func (w *delayedWatch) read(initial bool) {
	clk := w.delay.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	for ev := range w.inner.ResultChan() {
		held := heldEvent{event: ev}
		if initial && ev.Type == watch.Bookmark && endsInitialEvents(ev.Object) {
			initial = false
		} else if !initial && w.delay.Delay > 0 {
			held.timer = clk.NewTimer(w.delay.Delay)
		}
		w.mu.Lock()
		if w.dropped {
			w.mu.Unlock()
			if held.timer != nil {
				held.timer.Stop()
			}
			continue
		}
		if held.timer != nil {
			held.id = w.delay.hold(ev)
		}
		w.queue = append(w.queue, held)
		w.mu.Unlock()
		w.signal()
	}
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.signal()
}

func (w *delayedWatch) signal() {
	select {
	case w.arrived <- struct{}{}:
	default:
	}
}

// write delivers the queued events in order, each once its timer fired,
// and closes out when inner ended and everything was delivered, or at Stop.
func (w *delayedWatch) write() {
	defer close(w.out)
	defer w.drop()
	for {
		w.mu.Lock()
		var head heldEvent
		empty, ended := len(w.queue) == 0, w.ended
		if !empty {
			head = w.queue[0]
		}
		w.mu.Unlock()
		if empty {
			if ended {
				return
			}
			select {
			case <-w.arrived:
				continue
			case <-w.stop:
				return
			}
		}
		if head.timer != nil {
			select {
			case <-head.timer.C():
			case <-w.stop:
				return
			}
			w.delay.release(head.id)
		}
		select {
		case w.out <- head.event:
		case <-w.stop:
			return
		}
		w.mu.Lock()
		w.queue = w.queue[1:]
		w.mu.Unlock()
	}
}

// drop forgets the events still held when the watch stops, and stops their
// timers.
func (w *delayedWatch) drop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.queue {
		if h.timer != nil {
			h.timer.Stop()
			w.delay.release(h.id)
		}
	}
	w.queue, w.dropped = nil, true
}

// endsInitialEvents reports whether a bookmark marks the end of a watch's
// initial state (watch-list streaming).
func endsInitialEvents(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
