package recorder

import (
	"context"
	"hash/maphash"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record/util"
)

// key is what makes two events the same, client-go's eventKey (getKey):
// type, action, reason, regarding and related object. client-go's key also
// holds the reporting controller and instance, which are the same for
// every event of a Recorder. It is only hashed, never kept.
//
// Unlike client-go's, it leaves out the objects' resourceVersions: the
// reference client-go takes of an object carries its resourceVersion, so
// that an event repeated after any write of its object (a failure
// reported on the object's status, again and again) is a new event each
// time, never a series. Without them, the same event about the same
// object joins its series however often the object was written between.
type key struct {
	eventType, action, reason string
	regarding, related        corev1.ObjectReference
}

func keyOf(ev *eventsv1.Event) key {
	k := key{eventType: ev.Type, action: ev.Action, reason: ev.Reason, regarding: ev.Regarding}
	k.regarding.ResourceVersion = ""
	if ev.Related != nil {
		k.related = *ev.Related
		k.related.ResourceVersion = ""
	}
	return k
}

// objectHash is the hash of the namespace and name of an event's regarding
// object, by which [Recorder.Forget] finds its entries.
func (r *Recorder) objectHash(namespace, name string) uint64 {
	return maphash.Comparable(r.seed, types.NamespacedName{Namespace: namespace, Name: name})
}

// single is what a Recorder keeps of an event sent once within the
// window, in place of client-go's copy of it: 24 bytes. A repeat, whose
// regarding object is the same (it is part of the key), gives the rest:
// the namespace, and the name from the regarding object's name and the
// eventTime.
type single struct {
	// check is the key's second hash: an entry whose check differs is
	// another key's.
	check uint64
	// first is the event's eventTime in Unix nanoseconds, which its name
	// ends with.
	first int64
	// obj is the objectHash of the regarding object.
	obj uint64
}

// entry is what a Recorder keeps of a series, whose count is written
// without an event at hand: 56 bytes and the event's namespace/name. An
// event sent once whose name client-go's GenerateEventName made a UUID
// (the regarding object's name made an invalid one) is kept so too, with
// a count of 1.
type entry struct {
	check uint64
	// obj is the objectHash of the regarding object.
	obj uint64
	// ref is the namespace and name of the event on the server,
	// "namespace/name".
	ref string
	// first is the event's eventTime, last the series'
	// lastObservedTime, in Unix nanoseconds.
	first, last int64
	// count is the series' count.
	count int32
	// lost: a refresh found no event on the server; the next occurrence
	// creates it again.
	lost bool
}

func (e entry) namespaceName() (namespace, name string) {
	namespace, name, _ = strings.Cut(e.ref, "/")
	return namespace, name
}

// seriesEvent is the event the patch of e's series is made of: its name,
// namespace and series only.
func (e entry) seriesEvent() *eventsv1.Event {
	ns, name := e.namespaceName()
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Series:     &eventsv1.EventSeries{Count: e.count, LastObservedTime: microTime(e.last)},
	}
}

func microTime(unixNano int64) metav1.MicroTime {
	return metav1.MicroTime{Time: time.Unix(0, unixNano)}
}

// namedAfter reports whether name is regarding's name, a dot and more: the
// name GenerateEventName gives unless it falls back to a UUID.
func namedAfter(name, regarding string) bool {
	return len(name) > len(regarding) && name[len(regarding)] == '.' && name[:len(regarding)] == regarding
}

// record merges ev into its series as client-go's recordToSink does and
// queues what is to be sent: the first occurrence of a key is created; the
// second patches the first into a series of count 2; later ones are only
// counted, and the count is written when the series ends (finishSeries)
// and every refresh period (refreshSeries). An event dropped because the
// queue is full leaves its series as it was, as in client-go, whose cache
// never sees a dropped event.
func (r *Recorder) record(ev *eventsv1.Event) {
	k := keyOf(ev)
	h, check := maphash.Comparable(r.seed, k), maphash.Comparable(r.check, k)
	obj := r.objectHash(ev.Regarding.Namespace, ev.Regarding.Name)
	now := ev.EventTime.UnixNano()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if e, ok := r.series[h]; ok {
		if e.check != check {
			// Another key with the same 64-bit hash (about once in 2^64
			// pairs): send the event on its own rather than merge two
			// keys.
			r.enqueue(ev, h)
			return
		}
		e.count++
		e.last = now
		if e.count == 2 || e.lost {
			// The event at hand, named as the series' first event and
			// with its eventTime, so that the patch finds the first and,
			// if it is gone, the create puts it back.
			ns, name := e.namespaceName()
			ev.Name, ev.Namespace = name, ns
			ev.EventTime = microTime(e.first)
			ev.Series = &eventsv1.EventSeries{Count: e.count, LastObservedTime: microTime(now)}
			if !r.enqueue(ev, h) {
				return
			}
			e.lost = false
		}
		r.series[h] = e
		return
	}
	if s, ok := r.singles[h]; ok {
		if s.check != check { // another key's, as above
			r.enqueue(ev, h)
			return
		}
		ev.Name = util.GenerateEventName(ev.Regarding.Name, s.first)
		ev.EventTime = microTime(s.first)
		ev.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: microTime(now)}
		// ev is the sender's once queued (it decodes the answer into it).
		ref := ev.Namespace + "/" + ev.Name
		if !r.enqueue(ev, h) {
			return
		}
		delete(r.singles, h)
		r.series[h] = entry{check: check, obj: obj, ref: ref, first: s.first, last: now, count: 2}
		r.peakSeries = max(r.peakSeries, len(r.series))
		return
	}
	named, ref := namedAfter(ev.Name, ev.Regarding.Name), ev.Namespace+"/"+ev.Name
	if !r.enqueue(ev, h) {
		return
	}
	if named {
		r.singles[h] = single{check: check, first: now, obj: obj}
		r.peakSingles = max(r.peakSingles, len(r.singles))
		return
	}
	r.series[h] = entry{check: check, obj: obj, ref: ref, first: now, last: now, count: 1}
	r.peakSeries = max(r.peakSeries, len(r.series))
}

// Forget forgets the events recorded about every object of that namespace
// and name (of any kind): their entries, kept for a repeat to join its
// series, go, and a series whose count was not written yet keeps the
// count last written. Call it when the object is gone: a reconcile.Loop
// does, when its object is not found. Events about it recorded later start
// afresh. A nil Recorder forgets nothing.
//
// The entries go in batches: at once when they are many to forget, and in
// any case at the next [Recorder.Len], scrape of the metric, or end of a
// series round (every 6 minutes), whichever comes first.
func (r *Recorder) Forget(regarding types.NamespacedName) {
	if r == nil || r.queue == nil {
		return
	}
	h := r.objectHash(regarding.Namespace, regarding.Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = map[uint64]struct{}{}
	}
	r.gone[h] = struct{}{}
	if len(r.gone) >= max(forgetBatch, (len(r.singles)+len(r.series))/8) {
		r.sweepLocked()
	}
}

// forgetBatch is the fewest objects forgotten at once: a sweep looks at
// every entry, so it waits until there is enough to forget (an eighth of
// the entries, or this many).
const forgetBatch = 16

// sweepLocked drops the entries of the objects Forget was given. r.mu is
// held.
func (r *Recorder) sweepLocked() {
	if len(r.gone) == 0 {
		return
	}
	for h, s := range r.singles {
		if _, ok := r.gone[s.obj]; ok {
			delete(r.singles, h)
		}
	}
	for h, e := range r.series {
		if _, ok := r.gone[e.obj]; ok {
			delete(r.series, h)
		}
	}
	clear(r.gone)
}

// Len returns how many events the Recorder remembers now, to merge their
// repeats into series: each for at most the finish period (6 minutes, as
// client-go's) after its last occurrence, and those about a forgotten
// object not at all.
func (r *Recorder) Len() int {
	s, series := r.sizes()
	return s + series
}

// sizes returns how many events sent once and how many series the
// Recorder remembers, once the forgotten objects' entries are gone.
func (r *Recorder) sizes() (singles, series int) {
	if r == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	return len(r.singles), len(r.series)
}

// rounds runs finishSeries every finish period and refreshSeries every
// refresh period until ctx is done, the period counted from the end of the
// last run, as client-go's wait.UntilWithContext runs them. client-go also
// runs both at once when it starts, on a cache that is empty then; a
// Recorder's holds the events queued before Start, whose first writes
// must go out before any count is written again: its first rounds come one
// period after Start.
func (r *Recorder) rounds(ctx context.Context) {
	c := r.clock()
	finish, refresh := c.NewTimer(r.finish), c.NewTimer(r.refresh)
	defer finish.Stop()
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-finish.C():
			r.finishSeries(ctx)
			finish.Reset(r.finish)
		case <-refresh.C():
			r.refreshSeries(ctx)
			refresh.Reset(r.refresh)
		}
	}
}

// pending is an entry being written by finishSeries or refreshSeries.
type pending struct {
	h uint64
	e entry
}

// finishSeries is client-go's: a series last seen more than the finish
// period ago has ended, and its count is written; a single event sent more
// than the finish period ago is forgotten. A series whose count could not
// be written for a transport error stays, to be written at the next round.
// Unlike client-go, it writes outside the lock: an occurrence recorded
// meanwhile continues the series, which then stays.
func (r *Recorder) finishSeries(ctx context.Context) {
	cutoff := r.now().Add(-r.finish).UnixNano()
	var ended []pending
	r.mu.Lock()
	r.sweepLocked()
	for h, s := range r.singles {
		if s.first < cutoff {
			delete(r.singles, h)
		}
	}
	for h, e := range r.series {
		if e.last >= cutoff {
			continue
		}
		if e.count == 1 || e.lost {
			// A single event; or a series whose event is gone from the
			// server, with no event at hand to create it again.
			delete(r.series, h)
			continue
		}
		ended = append(ended, pending{h, e})
	}
	r.mu.Unlock()
	for _, p := range ended {
		if _, retry := r.recordEvent(ctx, p.e.seriesEvent(), false); retry {
			continue
		}
		r.mu.Lock()
		if cur, ok := r.series[p.h]; ok && cur == p.e {
			delete(r.series, p.h)
		}
		r.mu.Unlock()
	}
	r.shrink()
}

// refreshSeries is client-go's refreshExistingEventSeries: it writes the
// count of every series again, so that a long series' event outlives the
// API server's event TTL. A series whose event is gone from the server is
// marked lost: client-go creates it again from its copy; a Recorder, which
// keeps none, creates it from the next occurrence.
func (r *Recorder) refreshSeries(ctx context.Context) {
	var series []pending
	r.mu.Lock()
	for h, e := range r.series {
		if e.count > 1 && !e.lost {
			series = append(series, pending{h, e})
		}
	}
	r.mu.Unlock()
	for _, p := range series {
		if notFound, _ := r.recordEvent(ctx, p.e.seriesEvent(), false); !notFound {
			continue
		}
		r.mu.Lock()
		if cur, ok := r.series[p.h]; ok && cur.check == p.e.check && cur.ref == p.e.ref {
			cur.lost = true
			r.series[p.h] = cur
		}
		r.mu.Unlock()
	}
}

// shrink rebuilds a map of entries once it holds a quarter of its peak: a
// Go map keeps the room of its largest size.
func (r *Recorder) shrink() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.singles, r.peakSingles = shrunk(r.singles, r.peakSingles)
	r.series, r.peakSeries = shrunk(r.series, r.peakSeries)
}

func shrunk[V any](m map[uint64]V, peak int) (map[uint64]V, int) {
	if peak < 1024 || len(m)*4 > peak {
		return m, peak
	}
	c := make(map[uint64]V, len(m))
	for h, v := range m {
		c[h] = v
	}
	return c, len(c)
}
