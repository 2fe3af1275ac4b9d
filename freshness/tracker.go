package freshness

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Defaults of a zero [Tracker].
const (
	// DefaultMaxWait bounds how long a read waits for the cache to catch
	// up: well above the usual watch latency (milliseconds), short enough
	// not to hold a worker when the cache is far behind.
	DefaultMaxWait = 2 * time.Second
	// DefaultTTL is how long a write is remembered when no read or event
	// shows the cache has caught up.
	DefaultTTL = 2 * time.Minute
	// DefaultMaxEntries bounds how many writes are remembered.
	DefaultMaxEntries = 50_000
)

// maxNamespaces bounds, per informer, how many namespaces a Tracker
// remembers the last event of: past it, it starts afresh (a write is then
// remembered until its own event instead of being known as delivered). A
// namespace is forgotten sooner, once the informer holds no object of it.
const maxNamespaces = 4096

// ErrStale is matched (errors.Is) by every [*StaleError].
var ErrStale = errors.New("freshness: the cache has not caught up with this process's writes")

// StaleError reports a read that found the cache older than this process's
// last write of the object and that did not catch up within MaxWait (or
// could not be waited for: no informers). [errors.Classify] classes it as
// [errors.ClassConflict]: requeue.Policy retries it soon and quietly.
type StaleError struct {
	// Kind is the object's kind, "Pod" for example.
	Kind string
	// Key is the object's namespace and name.
	Key client.ObjectKey
	// Want says what the cache lacked: the resourceVersion of the write,
	// the object this process created, or the deletion it made.
	Want string
	// Waited is how long the read waited.
	Waited time.Duration
}

// Error implements error.
func (e *StaleError) Error() string {
	return fmt.Sprintf("freshness: the cache holds %s %s older than this process's last write (want %s; waited %s)",
		e.Kind, e.Key, e.Want, e.Waited.Round(time.Millisecond))
}

// Is makes a StaleError match [ErrStale].
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Class is [errors.ClassConflict]: a read that saw an old object, retried
// soon and quietly, like a 409.
func (e *StaleError) Class() errors.Class { return errors.ClassConflict }

// ErrInvalidTracker is wrapped by the error of [Tracker.Validate] for a
// Tracker set up wrong, with the reason.
var ErrInvalidTracker = errors.New("freshness: invalid Tracker")

// Tracker remembers the writes of this process and keeps the clients it
// guards from reading a cached object older than them. The zero value is
// ready to use; set fields before first use. A Tracker is safe for
// concurrent use; share one per manager (or per controller).
//
// A Tracker with a field set wrong ([Tracker.Validate]) guards nothing: its
// NewClient returns the error, and every call of a client it wraps returns
// it, classed permanent, without sending anything.
//
// What it reads of a cached object: its resourceVersion and whether it is
// there (metadata, which a cache diet keeps, of parts too). A guarded read
// passes the caller's options on, client.UnsafeDisableDeepCopy included.
//
// What it remembers is bounded and forgotten (docs/memory.md, "Bounds";
// the gauge reconcilekit_freshness_entries): a write until the informer
// delivers it or a newer event of its namespace, until the object's
// deletion is delivered (an informer that lost its watch, during an API
// server outage, delivers it when it lists again), and at most TTL, at
// most MaxEntries writes; the reads waiting, one entry per object waited
// for; and per informer the newest event of each namespace, until the
// informer holds no object of it any more (its last one deleted, while
// watched or as the informer lists again after losing its watch), at most
// 4096 namespaces (past that it starts afresh).
type Tracker struct {
	// Informers are the cache's informers (the manager's mgr.GetCache()),
	// whose events wake a read waiting for the cache. NewClient sets them
	// from the manager's cache when nil. Without them a stale read returns
	// a StaleError at once.
	Informers cache.Informers
	// MaxWait bounds one read's wait. Zero means [DefaultMaxWait] (2s); a
	// negative value never waits.
	MaxWait time.Duration
	// TTL is how long a write is remembered at most. Zero means
	// [DefaultTTL] (2m).
	TTL time.Duration
	// MaxEntries bounds how many writes are remembered; the oldest is
	// forgotten first. Zero means [DefaultMaxEntries] (50,000).
	MaxEntries int
	// Clock tells the time of writes, for TTL. Nil means the real clock.
	// A read's wait for the cache (MaxWait) always runs on real timers, so
	// that a test clock nobody steps never holds a worker: it is measured
	// by the real clock too.
	Clock clock.PassiveClock

	validOnce sync.Once
	invalid   error

	mu        sync.Mutex
	watchMu   sync.Mutex // serializes handler registrations
	informers cache.Informers
	entries   map[key]*list.Element
	order     list.List // of *entry, most recent write first
	waiters   map[key][]chan struct{}
	watched   map[watchKey]bool
	// seen is, per informer and namespace ("" for cluster-scoped objects),
	// the newest resourceVersion of an event the informer delivered (the
	// cache has applied every write of that namespace up to it), and how
	// many objects of the namespace the informer holds, so that a namespace
	// is forgotten with its last object.
	seen map[watchKey]map[string]nsProgress
	// uncached says which reads do not come from the cache, as the
	// manager's client options say (NewClient); nil: typed and metadata
	// reads do, unstructured ones do not (controller-runtime's default).
	uncached *uncachedReads
}

// uncachedReads are the reads a client sends to the API server instead of
// the cache (client.CacheOptions.DisableFor and Unstructured).
type uncachedReads struct {
	gvks         map[schema.GroupVersionKind]bool
	unstructured bool // unstructured reads come from the cache
}

// key identifies one object.
type key struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// watchKey identifies one informer: typed, unstructured and metadata-only
// informers of a kind are distinct.
type watchKey struct {
	gvk  schema.GroupVersionKind
	form string
}

// nsProgress is what a Tracker remembers of one namespace, per informer.
type nsProgress struct {
	// rv is the newest resourceVersion of an event the informer delivered
	// in the namespace.
	rv string
	// objects counts the informer's adds of the namespace's objects less
	// its deletes: the objects of the namespace the informer holds, when
	// the Tracker saw every add (the informer replays its objects to a new
	// handler as adds). It is below one when the Tracker did not, after it
	// started afresh: then the namespace stays until the next start afresh.
	objects int
}

// entry is what this process last wrote to one object.
type entry struct {
	key key
	uid types.UID
	// rv is the resourceVersion the write returned; "" after a delete.
	rv string
	// created: this process created the object, so a cache without it is
	// behind. deleted: this process deleted it.
	created, deleted bool
	at               time.Time
}

// Validate reports a Tracker set up wrong: a negative TTL or MaxEntries
// (zero means the default; there is no meaning for less). A negative MaxWait
// is valid: it never waits. The error wraps [ErrInvalidTracker]. The
// Tracker calls it on first use; call it while setting up to fail early.
func (t *Tracker) Validate() error {
	switch {
	case t == nil:
		return fmt.Errorf("%w: nil", ErrInvalidTracker)
	case t.TTL < 0:
		return fmt.Errorf("%w: TTL is negative (%s); zero means DefaultTTL", ErrInvalidTracker, t.TTL)
	case t.MaxEntries < 0:
		return fmt.Errorf("%w: MaxEntries is negative (%d); zero means DefaultMaxEntries", ErrInvalidTracker, t.MaxEntries)
	}
	return nil
}

// valid is [Tracker.Validate] of the first use, classed permanent.
func (t *Tracker) valid() error {
	t.validOnce.Do(func() {
		if err := t.Validate(); err != nil {
			t.invalid = errors.Permanent(err)
		}
	})
	return t.invalid
}

// Len returns how many writes the Tracker remembers now, once those older
// than TTL are forgotten.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked()
	return len(t.entries)
}

// sizes is what a Tracker holds, by map.
type sizes struct{ writes, waiters, namespaces int }

func (s sizes) plus(o sizes) sizes {
	return sizes{s.writes + o.writes, s.waiters + o.waiters, s.namespaces + o.namespaces}
}

// sizes returns what t holds now, writes older than TTL forgotten.
func (t *Tracker) sizes() sizes {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked()
	s := sizes{writes: len(t.entries), waiters: len(t.waiters)}
	for _, byNS := range t.seen {
		s.namespaces += len(byNS)
	}
	return s
}

// NewClient is a client.NewClientFunc for ctrl.Options.NewClient: it builds
// the manager's client as controller-runtime does and guards it with t,
// taking the informers from the manager's cache when t.Informers is nil.
func (t *Tracker) NewClient(config *rest.Config, options client.Options) (client.Client, error) {
	if err := t.valid(); err != nil {
		return nil, err
	}
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	if options.Cache != nil {
		u := &uncachedReads{gvks: map[schema.GroupVersionKind]bool{}, unstructured: options.Cache.Unstructured}
		for _, obj := range options.Cache.DisableFor {
			if gvk, err := c.GroupVersionKindFor(obj); err == nil {
				u.gvks[gvk] = true
			}
		}
		t.mu.Lock()
		if inf, ok := options.Cache.Reader.(cache.Informers); ok && t.informers == nil {
			t.informers = inf
		}
		t.uncached = u
		t.mu.Unlock()
	}
	return t.Wrap(c), nil
}

// Wrap returns c guarded by t: its writes are remembered and its reads
// never return a cached object older than them. A client t already guards
// is returned as it is.
func (t *Tracker) Wrap(c client.Client) client.Client {
	if g, ok := c.(*guarded); ok && g.t == t {
		return c
	}
	return &guarded{Client: c, t: t}
}

// TrackerOf returns the Tracker that guards c, or nil when c is not a
// guarded client.
func TrackerOf(c client.Client) *Tracker {
	if g, ok := c.(*guarded); ok {
		return g.t
	}
	return nil
}

func (t *Tracker) now() time.Time {
	if t.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return t.Clock.Now()
}

func (t *Tracker) maxWait() time.Duration {
	switch {
	case t.MaxWait < 0:
		return 0
	case t.MaxWait == 0:
		return DefaultMaxWait
	}
	return t.MaxWait
}

// record remembers a write of obj, which holds the server's answer.
func (t *Tracker) record(k key, obj metav1.Object, created bool) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deliveredLocked(k, rv) {
		// The informer delivered this write before the write returned (a
		// busy process reads its answers late): the cache holds it or
		// something newer, as when observe drops an entry. Keeping it would
		// hold memory until the TTL for nothing.
		if el, ok := t.entries[k]; ok {
			if c, err := resourceversion.CompareResourceVersion(el.Value.(*entry).rv, rv); err == nil && c <= 0 {
				t.dropLocked(k)
			}
		}
		return
	}
	e := t.upsert(k)
	if !e.deleted && e.rv != "" && e.uid == obj.GetUID() {
		if c, err := resourceversion.CompareResourceVersion(e.rv, rv); err == nil && c > 0 {
			rv = e.rv // a concurrent write already recorded a newer version
		}
		created = created || e.created
	}
	*e = entry{key: k, uid: obj.GetUID(), rv: rv, created: created, at: t.now()}
}

// recordDelete remembers that this process deleted obj.
func (t *Tracker) recordDelete(k key, obj metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.upsert(k)
	*e = entry{key: k, uid: obj.GetUID(), deleted: true, at: t.now()}
}

// upsert returns k's entry, new or moved to the front; t.mu is held.
func (t *Tracker) upsert(k key) *entry {
	if t.entries == nil {
		t.entries = map[key]*list.Element{}
		trackers.Add(t)
	}
	if el, ok := t.entries[k]; ok {
		t.order.MoveToFront(el)
		return el.Value.(*entry)
	}
	limit := t.MaxEntries
	if limit <= 0 {
		limit = DefaultMaxEntries
	}
	for len(t.entries) >= limit && t.order.Len() > 0 {
		t.dropLocked(t.order.Back().Value.(*entry).key)
	}
	e := &entry{key: k}
	t.entries[k] = t.order.PushFront(e)
	return e
}

// snapshot returns k's entry, if any, and whether the informer of form has
// already gone past the write it remembers (caughtUpLocked). Taken before a
// read, it says what that read must show: a read that begins after the
// informer went past the write sees it, whatever the copy shows; one that
// began before may not, even if the informer catches up before the read
// returns.
func (t *Tracker) snapshot(k key, form string) (e entry, tracked, settled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked()
	el, ok := t.entries[k]
	if !ok {
		return entry{}, false, true
	}
	e = *el.Value.(*entry)
	return e, true, t.caughtUpLocked(watchKey{gvk: k.gvk, form: form}, e)
}

// unsettled returns copies of the entries of one kind, in one namespace
// ("" for every namespace), that the informer of form has not gone past
// yet: taken before a List, the writes that List may not show.
func (t *Tracker) unsettled(gvk schema.GroupVersionKind, namespace, form string) []entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked()
	var out []entry
	for k, el := range t.entries {
		e := *el.Value.(*entry)
		if k.gvk == gvk && (namespace == "" || k.namespace == namespace) && !t.caughtUpLocked(watchKey{gvk: gvk, form: form}, e) {
			out = append(out, e)
		}
	}
	return out
}

// expireLocked drops entries older than TTL; t.mu is held.
func (t *Tracker) expireLocked() {
	ttl := t.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	cutoff := t.now().Add(-ttl)
	for el := t.order.Back(); el != nil; el = t.order.Back() {
		e := el.Value.(*entry)
		if !e.at.Before(cutoff) {
			return
		}
		t.dropLocked(e.key)
	}
}

// caughtUp drops k's entry if it is still the one that was checked, and
// wakes the reads waiting for it.
func (t *Tracker) caughtUp(k key, checked entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.entries[k]; ok && *el.Value.(*entry) == checked {
		t.dropLocked(k)
	}
}

// dropLocked forgets k and wakes its waiters; t.mu is held.
func (t *Tracker) dropLocked(k key) {
	if el, ok := t.entries[k]; ok {
		t.order.Remove(el)
		delete(t.entries, k)
	}
	for _, ch := range t.waiters[k] {
		close(ch)
	}
	delete(t.waiters, k)
}

// fresh reports whether the cache's view of an object (found, and then obj)
// reflects the write e.
func fresh(e entry, found bool, obj metav1.Object) bool {
	if !found {
		// Missing is behind only for an object this process created (and
		// did not delete since); one it updated may have been deleted by
		// someone else, which is news, not staleness.
		return !e.created || e.deleted
	}
	if e.deleted {
		// Still there: fresh once marked for deletion (finalizers hold it)
		// or replaced by another object of the same name.
		return !obj.GetDeletionTimestamp().IsZero() || (e.uid != "" && obj.GetUID() != e.uid)
	}
	c, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), e.rv)
	if err != nil {
		return true // cannot compare: do not block
	}
	return c >= 0
}

// caughtUpLocked reports whether the informer of wk has delivered an event
// of e's namespace at or past the write e remembers: the cache has then
// applied that write, and whatever it says of the object (gone, deleted
// and created again by someone else, changed since) is news, not a lag.
// t.mu is held.
func (t *Tracker) caughtUpLocked(wk watchKey, e entry) bool {
	if e.rv == "" {
		return false // a delete: its own event says when the cache saw it
	}
	seen, ok := t.seen[wk][e.key.namespace]
	if !ok {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(seen.rv, e.rv)
	return err == nil && c >= 0
}

// deliveredLocked reports whether an informer of k's kind has delivered an
// event of k's namespace at or past rv (caughtUpLocked, for any form): the
// cache of that informer has applied the write that returned rv. t.mu is
// held.
func (t *Tracker) deliveredLocked(k key, rv string) bool {
	for wk := range t.seen {
		if wk.gvk == k.gvk && t.caughtUpLocked(wk, entry{key: k, rv: rv}) {
			return true
		}
	}
	return false
}

// cachedLocked reports whether reads of gvk in form come from the cache,
// so that watching its informer starts nothing a read did not; t.mu is
// held.
func (t *Tracker) cachedLocked(gvk schema.GroupVersionKind, form string) bool {
	if t.uncached == nil {
		return form != "unstructured"
	}
	if t.uncached.gvks[gvk] {
		return false
	}
	return form != "unstructured" || t.uncached.unstructured
}

// watchReads makes sure the informer behind a read of gvk in form tells
// the tracker its events, before any write of this process could need
// them: a deletion by someone else that the informer delivers before the
// next read of the object is then known when that read comes. It does
// nothing for reads that do not come from the cache (it would start an
// informer) and costs one map lookup once the informer is watched.
func (t *Tracker) watchReads(ctx context.Context, gvk schema.GroupVersionKind, form string, obj client.Object) {
	wk := watchKey{gvk: gvk, form: form}
	t.mu.Lock()
	inf := t.Informers
	if inf == nil {
		inf = t.informers
	}
	need := inf != nil && !t.watched[wk] && t.cachedLocked(gvk, form)
	t.mu.Unlock()
	if need {
		t.watch(ctx, inf, wk, obj)
	}
}

// want describes what a stale read waits for.
func (e entry) want() string {
	switch {
	case e.deleted:
		return "the deletion of uid " + string(e.uid)
	case e.created:
		return "the created object at resourceVersion " + e.rv
	}
	return "resourceVersion " + e.rv
}

// subscribe registers a wake-up for k and makes sure the informer of obj's
// form wakes it. It returns nil when there are no informers to wait on, or
// when k was dropped meanwhile (closed channel).
func (t *Tracker) subscribe(ctx context.Context, k key, form string, obj client.Object) chan struct{} {
	t.mu.Lock()
	inf := t.Informers
	if inf == nil {
		inf = t.informers
	}
	wk := watchKey{gvk: k.gvk, form: form}
	needWatch := inf != nil && !t.watched[wk]
	t.mu.Unlock()
	if inf == nil {
		return nil
	}
	if needWatch && !t.watch(ctx, inf, wk, obj) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	if _, ok := t.entries[k]; !ok {
		close(ch)
		return ch
	}
	if t.waiters == nil {
		t.waiters = map[key][]chan struct{}{}
	}
	t.waiters[k] = append(t.waiters[k], ch)
	return ch
}

// unsubscribe removes a wake-up that was not used.
func (t *Tracker) unsubscribe(k key, ch chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.waiters[k]
	for i, w := range ws {
		if w == ch {
			t.waiters[k] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(t.waiters[k]) == 0 {
		delete(t.waiters, k)
	}
}

// watch adds an event handler to the informer of obj's kind and form, so
// that events drop caught-up entries and wake their waiters. It runs once
// per informer, on the first stale read, when the informer must already
// exist (the stale copy came from it).
func (t *Tracker) watch(ctx context.Context, inf cache.Informers, wk watchKey, obj client.Object) bool {
	// One registration at a time, outside t.mu: the informer replays its
	// objects to the new handler, which takes t.mu.
	t.watchMu.Lock()
	defer t.watchMu.Unlock()
	t.mu.Lock()
	done := t.watched[wk]
	t.mu.Unlock()
	if done {
		return true
	}
	informer, err := inf.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.observe(wk, o, added) },
		UpdateFunc: func(_, o any) { t.observe(wk, o, updated) },
		DeleteFunc: func(o any) { t.observe(wk, o, deleted) },
	}); err != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watched == nil {
		t.watched = map[watchKey]bool{}
	}
	t.watched[wk] = true
	return true
}

// change is what an informer's event did to its cache: added an object,
// updated one, or deleted one.
type change int

const (
	added change = iota
	updated
	deleted
)

// observe is the informer event handler: the cache now holds o (or, when
// deleted, no longer does). It remembers how far the informer got in o's
// namespace, and forgets the namespace with its last object; an entry the
// event satisfies is dropped and its waiters woken.
func (t *Tracker) observe(wk watchKey, o any, ch change) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	k := key{gvk: wk.gvk, namespace: m.GetNamespace(), name: m.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seeLocked(wk, m.GetNamespace(), m.GetResourceVersion(), ch)
	el, ok := t.entries[k]
	if !ok {
		return
	}
	e := el.Value.(*entry)
	switch {
	case ch == deleted:
		// The cache had this object and no longer has it: it went past
		// every write of it. The deletion of an older object of the same
		// name says nothing about the one this process wrote.
		if e.deleted || e.uid == "" || m.GetUID() == e.uid {
			t.dropLocked(k)
		}
	case fresh(*e, true, m):
		t.dropLocked(k)
	}
}

// seeLocked records that the informer wk delivered an event at rv in
// namespace ns, which made its cache hold one object more, the same, or
// one less (ch); t.mu is held. A resourceVersion that is not an integer is
// ignored. The namespace is forgotten once its last object is deleted:
// what is forgotten only makes a later write there wait for its own event.
func (t *Tracker) seeLocked(wk watchKey, ns, rv string, ch change) {
	if rv == "" {
		return
	}
	byNS := t.seen[wk]
	if byNS == nil {
		if t.seen == nil {
			t.seen = map[watchKey]map[string]nsProgress{}
			trackers.Add(t)
		}
		byNS = map[string]nsProgress{}
		t.seen[wk] = byNS
	}
	old, ok := byNS[ns]
	switch {
	case ok:
	case ch == deleted:
		return // nothing remembered of the namespace, nothing to forget
	default:
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			return
		}
		if len(byNS) >= maxNamespaces {
			// More namespaces hold objects than the bound: start afresh
			// rather than remember every one.
			byNS = map[string]nsProgress{}
			t.seen[wk] = byNS
		}
	}
	p := old
	switch ch {
	case added:
		p.objects++
	case deleted:
		p.objects--
		if old.objects == 1 {
			// Its last object is gone from the cache.
			delete(byNS, ns)
			return
		}
	}
	if c, err := resourceversion.CompareResourceVersion(rv, old.rv); !ok || (err == nil && c > 0) {
		p.rv = rv
	}
	byNS[ns] = p
	// Reads waiting in this namespace may now be satisfied.
	for k, ws := range t.waiters {
		if k.gvk != wk.gvk || k.namespace != ns {
			continue
		}
		if el, ok := t.entries[k]; ok && t.caughtUpLocked(wk, *el.Value.(*entry)) {
			for _, ch := range ws {
				close(ch)
			}
			delete(t.waiters, k)
		}
	}
}
