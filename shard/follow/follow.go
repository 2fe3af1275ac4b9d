package follow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/shard/internal/kind"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// RangeLabel labels an object that a sharded controller creates and owns
// (a child, such as the Pod of an At) with its owner's range, "<i>-of-<n>"
// ([Label]): a replica's cache lists and watches, by label selector, only
// the children of the ranges it holds ([CacheOptions]).
//
// A child labelled by v0.4.0 carries its range under
// shard.reconcilekit.dev/range alone, which no cache selects by: v0.5.x
// labelled children under both keys, and a child that lacks this one is
// in no range until it gets it (label it again with Label and patch it,
// or add the key by hand).
const RangeLabel = "shard.reconcilekit.io/range"

// Holder is what a cache follows: the ranges one replica holds, as a
// shard.Member holds them through Leases.
type Holder interface {
	// Holdings returns, by range index (as ranges.Split numbers them),
	// this replica's holding of each range its caches hold, and 0 for the
	// others: a number that a range gets anew each time the replica
	// acquires it. Its length is the number of ranges.
	Holdings() []uint64
	// Notify returns a channel that receives a value whenever Holdings may
	// have changed, and a function that stops it.
	Notify() (changed <-chan struct{}, stop func())
	// Group names the replicas' group, for the metrics.
	Group() string
}

// Kinds names the kinds whose informers follow the ranges a [Holder]
// holds, for [CacheOptions]. A kind is matched in the form the cache holds
// it, as for ranges.CacheOptions.
type Kinds struct {
	// Objects are split by the hash of their own UID: the kind the
	// controller reconciles (its For).
	Objects []client.Object
	// Children are split by their owner's range, read from the range
	// label ([RangeLabel]): the kinds the controller creates and owns (its Owns), each labelled
	// with [Label] when it is created. A child without the label is in no
	// range, and no replica caches it.
	Children []client.Object
}

// Label sets [RangeLabel] on child to owner's range among h's ranges, so
// that the replica holding owner's range caches child ([Kinds].Children).
// Call it on each child before creating it, as controllerutil.
// SetControllerReference. It changes nothing and returns an error when h
// has no valid number of ranges or owner has no UID yet.
func Label(h Holder, owner, child client.Object) error {
	if owner.GetUID() == "" {
		return fmt.Errorf("shard: cannot label %T %s with its owner's range: the owner %T %s has no UID yet",
			child, client.ObjectKeyFromObject(child), owner, client.ObjectKeyFromObject(owner))
	}
	n := len(h.Holdings())
	i, err := ranges.Of(owner, n)
	if err != nil {
		return err
	}
	l := child.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[RangeLabel] = rangeLabelValue(i, n)
	child.SetLabels(l)
	return nil
}

func rangeLabelValue(i, n int) string { return strconv.Itoa(i) + "-of-" + strconv.Itoa(n) }

// CacheOptions returns base with the informers of k's kinds following the
// ranges h holds: in a cache built from them (a manager's, through
// ctrl.Options.Cache), each lists and watches only the objects of those
// ranges (the ShardSelector of the ranges for Objects, a label selector on
// the range label for Children), and follows them as they change: when h
// acquires a range, the range's objects are listed and added (the
// controller hears of each, as of a new object) and the watch goes on with
// the new selection; when h has released or lost one, its objects leave
// the cache (the controller hears of their deletion, which
// ranges.Predicate drops). A range lost and acquired again, however
// quickly, is handed over again: its objects are deleted and added. A
// range being given up stays cached until its work has drained. Other
// informers are left alone.
//
//	opts, err := follow.CacheOptions(cache.Options{}, member, follow.Kinds{
//		Objects:  []client.Object{&v1.Widget{}},
//		Children: []client.Object{&corev1.Pod{}},
//	})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// Every object is also filtered in the process by the same hash (or
// label), so the cache holds only h's ranges whatever the server does with
// a ShardSelector: on a server that ignores it the watches still carry
// every object (no saving in traffic, the same in memory), and on one that
// refuses it the selector is dropped, with one log line. A label selector
// the cache already has for a child kind (ByObject or
// DefaultLabelSelector) is kept and combined with the range's; children
// with per-namespace label selectors are refused.
//
// When a watch's connection ends (a server restarting, a watch timing out)
// the watch is made again from where it stood, retried for about a minute
// while the server is out of reach, without ending the informer's watch
// (a reflector backs off longer with each watch that ends); only the
// server's answer ("too old resource version") makes the informer list
// again.
//
// Until h holds a range its informers hold nothing, so the cache syncs at
// once. The number of objects each holds is the gauge
// reconcilekit_shard_cached_objects, by group and kind.
func CacheOptions(base cache.Options, h Holder, k Kinds) (cache.Options, error) {
	n := len(h.Holdings())
	split, err := ranges.Split(n)
	if err != nil {
		return base, err
	}
	if len(k.Objects)+len(k.Children) == 0 {
		return base, errors.New("shard: no kinds to follow: name the objects (and children) whose informers follow the ranges held")
	}
	specs := map[kind.Key]*followSpec{}
	add := func(obj client.Object, child bool) (kind.Key, *followSpec, error) {
		key, err := kind.Of(obj)
		if err != nil {
			return key, nil, err
		}
		if specs[key] != nil {
			return key, nil, fmt.Errorf("shard: %T is named twice in Kinds", obj)
		}
		specs[key] = &followSpec{h: h, n: n, ranges: split, child: child, kind: fmt.Sprintf("%T", obj)}
		return key, specs[key], nil
	}
	for _, obj := range k.Objects {
		if _, _, err := add(obj, false); err != nil {
			return base, err
		}
	}
	byObject := maps.Clone(base.ByObject)
	for _, obj := range k.Children {
		key, spec, err := add(obj, true)
		if err != nil {
			return base, err
		}
		// controller-runtime's informers set a kind's label selector on
		// every list and watch, over ours: the range's requirement goes in
		// a selector that it sets instead, combined with the one it had.
		var at client.Object = obj
		entry := cache.ByObject{}
		for o, bo := range byObject {
			if ok, _ := kind.Of(o); ok == key {
				at, entry = o, bo
				break
			}
		}
		for ns, c := range entry.Namespaces {
			if c.LabelSelector != nil {
				return base, fmt.Errorf("shard: %T has a label selector for namespace %q: a child kind's ranges need a label selector of their own", obj, ns)
			}
		}
		spec.extra = entry.Label
		if spec.extra == nil {
			spec.extra = base.DefaultLabelSelector
		}
		entry.Label = rangeSelector{spec}
		if byObject == nil {
			byObject = map[client.Object]cache.ByObject{}
		}
		byObject[at] = entry
	}
	base.ByObject = byObject
	next := base.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	base.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		key, err := kind.Of(obj)
		spec := specs[key]
		if err != nil || spec == nil {
			return next(lw, obj, resync, indexers)
		}
		fl := &follower{followSpec: spec, inner: lw, lw: toolscache.ToListerWatcherWithContext(lw), example: obj, known: map[string]known{}}
		return &followedInformer{SharedIndexInformer: next(fl, obj, resync, indexers), f: fl}
	}
	return base, nil
}

// holdings is, by range index, a holding of the range, or 0 for none.
type holdings []uint64

// set returns the ranges with a holding.
func (h holdings) set() []bool {
	out := make([]bool, len(h))
	for i, e := range h {
		out[i] = e != 0
	}
	return out
}

// followSpec is what the informers of one kind share.
type followSpec struct {
	h      Holder
	n      int
	ranges []ranges.Range
	child  bool
	kind   string
	// extra is the label selector the cache had for a child kind.
	extra labels.Selector
	// trace, when set, is told each step (the model test).
	trace func(string)

	// callMu serialises the calls of the kind's informers to the server,
	// so that rangeSelector prints the selection of the call being made.
	callMu  sync.Mutex
	calling atomic.Pointer[[]bool]
}

// index returns obj's range, or -1 for a child without a valid label.
func (s *followSpec) index(obj metav1.Object) int {
	n := s.n
	if !s.child {
		i, _ := ranges.Of(obj.(client.Object), n)
		return i
	}
	v := obj.GetLabels()[RangeLabel]
	is, ns, ok := strings.Cut(v, "-of-")
	i, err1 := strconv.Atoi(is)
	nn, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || nn != n || i < 0 || i >= n {
		return -1
	}
	return i
}

func (s *followSpec) in(obj metav1.Object, set []bool) bool {
	i := s.index(obj)
	return i >= 0 && set[i]
}

// labelSelector is the label selector for the children of set.
func (s *followSpec) labelSelector(set []bool) string {
	var vals []string
	for i, in := range set {
		if in {
			vals = append(vals, rangeLabelValue(i, len(set)))
		}
	}
	if len(vals) == 0 {
		vals = []string{"none"} // no range: a value no child carries
	}
	sel := RangeLabel + " in (" + strings.Join(vals, ",") + ")"
	if s.extra != nil && !s.extra.Empty() {
		sel = s.extra.String() + "," + sel
	}
	return sel
}

// shardSelector is the ShardSelector of set.
func shardSelector(set []bool, split []ranges.Range) string {
	var rs ranges.Set
	for i, in := range set {
		if in {
			rs = append(rs, split[i])
		}
	}
	if len(rs) == 0 {
		rs = ranges.Set{{Start: 0, Last: 0}} // no range: the one hash 0, filtered out in the process
	}
	return rs.Selector()
}

// rangeSelector is the label selector controller-runtime sets on the lists
// and watches of a child kind: the range requirement of the call being
// made, combined with the selector the cache had for the kind.
type rangeSelector struct{ s *followSpec }

var _ labels.Selector = rangeSelector{}

func (r rangeSelector) current() labels.Selector {
	set := r.s.calling.Load()
	var sel []bool
	if set != nil {
		sel = *set
	} else {
		sel = make([]bool, r.s.n)
	}
	parsed, err := labels.Parse(r.s.labelSelector(sel))
	if err != nil {
		return labels.Nothing()
	}
	return parsed
}

// String returns the selector sent with the call being made.
func (r rangeSelector) String() string { return r.current().String() }

// Matches reports whether ls matches the current selector.
func (r rangeSelector) Matches(ls labels.Labels) bool { return r.current().Matches(ls) }

// Empty reports false: it always selects by range.
func (r rangeSelector) Empty() bool { return false }

// Add returns the current selector with reqs added.
func (r rangeSelector) Add(reqs ...labels.Requirement) labels.Selector {
	return r.current().Add(reqs...)
}

// Requirements returns the current selector's requirements.
func (r rangeSelector) Requirements() (labels.Requirements, bool) { return r.current().Requirements() }

// DeepCopySelector returns r itself: it keeps following the ranges.
func (r rangeSelector) DeepCopySelector() labels.Selector { return r }

// RequiresExactMatch reports what the current selector requires of label.
func (r rangeSelector) RequiresExactMatch(label string) (string, bool) {
	return r.current().RequiresExactMatch(label)
}

// follower is the ListerWatcher of one informer that follows the ranges.
//
// What it keeps is what the informer's store holds: known, the objects,
// and covered, the holding of each range whose objects they are. Only the
// informer's current list or watch changes them (gen): a watch the
// reflector has stopped may still be finishing a step, and changes
// nothing. A list, or a watch that starts with the initial events,
// replaces them only once complete (its last page, its initial-events
// bookmark), as the informer replaces its store only then.
type follower struct {
	*followSpec
	inner   toolscache.ListerWatcher
	lw      toolscache.ListerWatcherWithContext
	example runtime.Object

	mu sync.Mutex
	// known is what the informer holds, by key: the objects a range's
	// departure deletes.
	known map[string]known
	// covered is, by range, the holding whose objects the informer holds.
	covered holdings
	// gen numbers the informer's lists and watches; the current one is
	// the last.
	gen uint64
	// listing is the selection of a paginated list under way, and listed
	// what its pages returned so far.
	listing holdings
	listed  map[string]known
	// refused: the server fails lists with a ShardSelector; filter in the
	// process only.
	refused atomic.Bool
}

var (
	_ toolscache.ListerWatcher            = (*follower)(nil)
	_ toolscache.ListerWatcherWithContext = (*follower)(nil)
)

// call lists (or watches, when watching) with the selection set, as the
// server should see it.
func (f *follower) call(ctx context.Context, set []bool, opts metav1.ListOptions, watching bool) (runtime.Object, watch.Interface, error) {
	f.callMu.Lock()
	defer f.callMu.Unlock()
	f.calling.Store(&set)
	do := func(opts metav1.ListOptions) (runtime.Object, watch.Interface, error) {
		if watching {
			w, err := f.lw.WatchWithContext(ctx, opts)
			return nil, w, err
		}
		l, err := f.lw.ListWithContext(ctx, opts)
		return l, nil, err
	}
	if f.child {
		return do(opts)
	}
	if f.refused.Load() {
		opts.ShardSelector = ""
		return do(opts)
	}
	plain := opts
	opts.ShardSelector = shardSelector(set, f.ranges)
	l, w, err := do(opts)
	if err == nil || watching || ctx.Err() != nil || !refusal(err) {
		return l, w, err
	}
	if l2, _, err2 := do(plain); err2 == nil {
		f.refused.Store(true)
		log.FromContext(ctx).Info("the API server refuses ShardSelector: this replica's cache filters in the process only (no saving in watch traffic)",
			"kind", f.kind, "error", err.Error())
		return l2, nil, nil
	}
	return l, w, err
}

// refusal reports whether err is a server's refusal of a ShardSelector: a
// bad request, or what kube-apiserver 1.37 answers (500, "invalid shard
// selector: ..."). Any other failure (a server restarting, overloaded or
// out of reach) says nothing about the selector: taken for a refusal, it
// would leave this replica's cache listing and watching every object for
// good.
func refusal(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || strings.Contains(err.Error(), "shard selector")
}

// relist returns the selection of a list (or a watch with initial events)
// that replaces what the informer holds: the ranges held now, but for
// those held anew since the informer took their objects. Those are left
// out, so that the list deletes their objects from the informer, and the
// watch then adds them again (follow): a controller hears of each as new,
// as it does of every range it acquires. Called with f.mu held.
func (f *follower) relist() holdings {
	want := holdings(f.h.Holdings())
	for i, e := range want {
		if e != 0 && f.covered != nil && f.covered[i] != 0 && f.covered[i] != e {
			want[i] = 0
		}
	}
	return want
}

// List lists with the selection held now.
func (f *follower) List(opts metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), opts)
}

// ListWithContext lists the objects of the ranges held now (a paginated
// list keeps the selection of its first page), filtered in the process
// too.
func (f *follower) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	if opts.Continue == "" || f.listing == nil {
		f.gen++
		f.listing, f.listed = f.relist(), map[string]known{}
		f.tracef("list gen %d set %v covered %v", f.gen, f.listing, f.covered)
	}
	set, gen := f.listing, f.gen
	f.mu.Unlock()
	l, _, err := f.call(ctx, set.set(), opts, false)
	if err != nil {
		return nil, err
	}
	// Aliases, not copies: the informer copies what it keeps.
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	n := len(items)
	kept := f.inSet(items, set.set())
	if len(kept) != n {
		if err := meta.SetList(l, kept); err != nil {
			return nil, err
		}
	}
	lm, err := meta.ListAccessor(l)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return l, nil // the informer has moved on; it discards this list
	}
	for _, item := range kept {
		obj, _ := meta.Accessor(item)
		f.listed[key(obj)] = known{uid: obj.GetUID(), i: f.index(obj)}
	}
	if lm.GetContinue() == "" {
		// The last page: the informer replaces what it holds with the list.
		f.known, f.covered = f.listed, set
		f.listing, f.listed = nil, nil
	}
	return l, nil
}

// inSet keeps, in place, the items whose objects are in set.
func (f *follower) inSet(items []runtime.Object, set []bool) []runtime.Object {
	kept := items[:0]
	for _, item := range items {
		if obj, err := meta.Accessor(item); err == nil && f.in(obj, set) {
			kept = append(kept, item)
		}
	}
	return kept
}

// known is an object the informer holds: its UID and range.
type known struct {
	uid types.UID
	i   int
}

func key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// noted is what an event does to what the informer holds, read from its
// object before the informer gets it: from then on the object is the
// informer's, and its transforms may change it in place.
type noted struct {
	typ watch.EventType
	key string
	known
	// initialEnd marks the bookmark that ends a watch's initial events.
	initialEnd bool
}

// noting reads what ev does to what the informer holds; false for an event
// without an object's metadata.
func (f *follower) noting(ev watch.Event) (noted, bool) {
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		return noted{}, false
	}
	n := noted{typ: ev.Type, key: key(obj)}
	switch ev.Type {
	case watch.Added, watch.Modified:
		n.known = known{uid: obj.GetUID(), i: f.index(obj)}
	case watch.Bookmark:
		n.initialEnd = obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	}
	return n, true
}

// note records in into what an event sent to the informer does to what it
// holds.
func (f *follower) note(in map[string]known, n noted) {
	switch n.typ {
	case watch.Added, watch.Modified:
		in[n.key] = n.known
	case watch.Deleted:
		delete(in, n.key)
	}
}

// current runs do with f.mu held if gen is the informer's current list or
// watch, and reports whether it was.
func (f *follower) current(gen uint64, do func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return false
	}
	do()
	return true
}

// cachedObjects is how many objects the informer holds.
func (f *follower) cachedObjects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.known)
}

// Watch watches with the selection of the last list.
func (f *follower) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), opts)
}

// WatchWithContext watches the selection of the informer's last list (or,
// for a watch that starts with the initial events, the ranges held now),
// and follows the ranges held from there.
func (f *follower) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	// Each watch hears of every change of the ranges held from before it
	// reads them: a watch the reflector has stopped takes no news from
	// the one it has now.
	notify, stopNotify := f.h.Notify()
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	f.mu.Lock()
	f.gen++
	gen, set := f.gen, f.covered
	if initial || set == nil {
		set = f.relist()
	}
	f.tracef("watch gen %d initial %v set %v covered %v rv %s", gen, initial, set, f.covered, opts.ResourceVersion)
	f.mu.Unlock()
	_, w, err := f.call(ctx, set.set(), opts, true)
	if err != nil {
		stopNotify()
		return nil, err
	}
	fw := &followWatch{f: f, gen: gen, opts: opts, inner: w, covered: set, ready: !initial, rv: opts.ResourceVersion,
		notify: notify, stopNotify: stopNotify,
		out: make(chan watch.Event), stop: make(chan struct{}), skip: map[int]string{}}
	if initial {
		fw.initial = map[string]known{}
	}
	go fw.run(ctx)
	return fw, nil
}

// IsWatchListSemanticsUnSupported passes on what the wrapped ListerWatcher
// says (client-go's reflector asks, to decide whether to stream lists).
func (f *follower) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(f.inner)
}

// followWatch is a watch of the ranges held that, when they change, sends
// the deletion of the objects of the ranges left, the objects of the
// ranges acquired, and goes on watching the new selection from where it
// was. A range held anew (lost and acquired again) is both left and
// acquired: its objects are deleted and added again, so that a controller
// hears of each as new.
type followWatch struct {
	f *follower
	// gen is the number of this watch among the informer's lists and
	// watches: once the informer has a newer one, this one changes nothing.
	gen   uint64
	opts  metav1.ListOptions
	inner watch.Interface
	// covered is the selection watched, by holding.
	covered holdings
	// ready: past the initial events, if any; initial is what they have
	// brought so far, which replaces what the informer holds at their end.
	ready   bool
	initial map[string]known
	// rv is the resourceVersion of the last event read from the server.
	rv string
	// skip holds, for a range just acquired, the resourceVersion of the
	// list that added its objects: its older events are not sent.
	skip map[int]string

	// pending: the ranges may have changed since the watch last followed
	// them; notify says when they do.
	pending    bool
	notify     <-chan struct{}
	stopNotify func()

	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// Stop ends the watch.
func (w *followWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// ResultChan returns the events.
func (w *followWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *followWatch) run(ctx context.Context) {
	defer w.stopNotify()
	defer close(w.out)
	defer func() { w.inner.Stop() }()
	w.pending = true // the ranges may have changed since the list
	for {
		if w.ready && w.pending {
			w.pending = false
			if !w.follow(ctx) {
				return
			}
		}
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-w.notify:
			w.pending = true
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				// The connection ended (a server restarting, a watch timing
				// out). Past the initial events, watch again from where
				// this watch stood, as the reflector would, but without
				// ending the watch it has: a reflector backs off more with
				// each watch that ends (up to 30 s), and after a restart
				// the first answer is all it needs ("too old resource
				// version": it lists again).
				if !w.ready || !w.reopen(ctx) {
					return
				}
				continue
			}
			if !w.pass(ev) {
				continue
			}
			n, ok := w.f.noting(ev)
			if !w.send(ev) {
				return
			}
			if ev.Type == watch.Error {
				// The reflector ends this watch, and lists or watches
				// again: nothing more to follow here.
				return
			}
			if ok {
				w.sent(n)
			}
		}
	}
}

// reopen watches the selection covered again from where the watch stands;
// false when the watch ended.
func (w *followWatch) reopen(ctx context.Context) bool {
	w.inner.Stop()
	var nw watch.Interface
	err := w.retry(ctx, func() (err error) {
		opts := metav1.ListOptions{ResourceVersion: w.rv, AllowWatchBookmarks: w.opts.AllowWatchBookmarks, TimeoutSeconds: w.opts.TimeoutSeconds}
		_, nw, err = w.f.call(ctx, w.covered.set(), opts, true)
		return err
	})
	if err != nil {
		return w.fail(ctx, err)
	}
	w.inner = nw
	return true
}

// retryAttempts and retryDelay bound how long a call of a watch waits for
// a server out of reach: about a minute, trying at most every second.
const (
	retryAttempts = 70
	retryDelay    = 100 * time.Millisecond
)

// retry calls do until it succeeds, fails with an answer of the server, or
// the server has stayed out of reach for retryAttempts tries; range changes
// meanwhile are noted for the next follow.
func (w *followWatch) retry(ctx context.Context, do func() error) error {
	delay := retryDelay
	for attempt := 1; ; attempt++ {
		err := do()
		if err == nil || !unreachable(err) || attempt == retryAttempts {
			return err
		}
		t := time.NewTimer(delay)
		for waiting := true; waiting; {
			select {
			case <-w.stop:
				t.Stop()
				return errStopped
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-w.notify:
				w.pending = true
			case <-t.C:
				waiting = false
			}
		}
		delay = min(2*delay, time.Second)
	}
}

// errStopped is retry's answer when the watch was stopped meanwhile.
var errStopped = errors.New("shard: the watch was stopped")

// unreachable reports whether err says the server could not answer (it is
// restarting, starting, overloaded or out of reach) rather than what it
// answered: the call is worth making again as it was.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || errors.Is(err, syscall.ECONNREFUSED)
}

func (w *followWatch) send(ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.stop:
		return false
	}
}

// pass notes the event's resourceVersion and reports whether to send it.
func (w *followWatch) pass(ev watch.Event) bool {
	if ev.Type == watch.Error {
		return true
	}
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		return true
	}
	w.rv = obj.GetResourceVersion()
	if ev.Type == watch.Bookmark {
		return true
	}
	i := w.f.index(obj)
	if i < 0 || w.covered[i] == 0 {
		return false
	}
	listed, ok := w.skip[i]
	return !ok || newer(w.rv, listed)
}

// sent records what an event the informer has received does to what it
// holds. Only then: an event the informer never got changes nothing.
func (w *followWatch) sent(n noted) {
	switch {
	case n.typ == watch.Bookmark:
		if !w.ready && n.initialEnd {
			// The informer replaces what it holds with the initial events.
			w.ready = true
			w.f.current(w.gen, func() { w.f.known, w.f.covered = w.initial, w.covered })
			w.initial = nil
		}
	case !w.ready:
		w.f.note(w.initial, n)
	default:
		w.f.current(w.gen, func() { w.f.note(w.f.known, n) })
	}
}

// newer reports whether resourceVersion a is newer than b, when both are
// numbers (as etcd's are); otherwise it says yes.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 != nil || err2 != nil || x > y
}

// follow moves the watch to the ranges held now; false when the watch
// ended.
func (w *followWatch) follow(ctx context.Context) bool {
	f := w.f
	want := holdings(f.h.Holdings())
	var added, removed []bool
	for i := range want {
		if w.covered[i] != 0 && want[i] != w.covered[i] {
			removed = setWith(removed, len(want), i)
		}
		if want[i] != 0 && want[i] != w.covered[i] {
			added = setWith(added, len(want), i)
		}
	}
	if added == nil && removed == nil {
		return true
	}
	f.tracef("follow gen %d want %v covered %v added %v removed %v", w.gen, want, w.covered, added, removed)
	covered := slices.Clone(w.covered)
	sent := false
	if removed != nil {
		// Each object leaves what the follower knows once the informer has
		// its deletion; the ranges, once every object has left.
		var gone []runtime.Object
		if !f.current(w.gen, func() { gone = f.leaving(removed, w.rv) }) {
			return false
		}
		for _, obj := range gone {
			ev := watch.Event{Type: watch.Deleted, Object: obj}
			n, _ := f.noting(ev)
			if !w.send(ev) || !f.current(w.gen, func() { f.note(f.known, n) }) {
				return false
			}
			sent = true
		}
		for i, r := range removed {
			if r {
				covered[i] = 0
			}
		}
		if !f.current(w.gen, func() { f.covered = slices.Clone(covered) }) {
			return false
		}
	}
	// The new watch starts where this one is; what it had not delivered
	// comes again.
	w.inner.Stop()
	if added != nil {
		opts := metav1.ListOptions{ResourceVersion: w.rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
		if w.rv == "" {
			opts.ResourceVersionMatch = ""
		}
		var l runtime.Object
		err := w.retry(ctx, func() (err error) {
			l, _, err = f.call(ctx, added, opts, false)
			return err
		})
		if err != nil {
			return w.fail(ctx, err)
		}
		items, err := meta.ExtractListWithAlloc(l)
		if err != nil {
			return w.fail(ctx, err)
		}
		f.tracef("follow gen %d listed %d", w.gen, len(items))
		for _, item := range f.inSet(items, added) {
			ev := watch.Event{Type: watch.Added, Object: item}
			n, _ := f.noting(ev)
			if !w.send(ev) || !f.current(w.gen, func() { f.note(f.known, n) }) {
				return false
			}
			sent = true
		}
		if lm, err := meta.ListAccessor(l); err == nil {
			for i, in := range added {
				if in {
					w.skip[i] = lm.GetResourceVersion()
				}
			}
		}
		for i, in := range added {
			if in {
				covered[i] = want[i]
			}
		}
		if !f.current(w.gen, func() { f.covered = slices.Clone(covered) }) {
			return false
		}
	}
	w.covered = covered
	if !w.reopen(ctx) {
		return false
	}
	if sent && w.rv != "" {
		// The events sent carry older resourceVersions: a bookmark puts
		// the informer back where the watch stands.
		bm := f.example.DeepCopyObject()
		if obj, err := meta.Accessor(bm); err == nil {
			obj.SetResourceVersion(w.rv)
			if !w.send(watch.Event{Type: watch.Bookmark, Object: bm}) {
				return false
			}
		}
	}
	return true
}

// leaving returns, for each object of the ranges in removed that the
// informer holds, an object of the informer's kind with its namespace,
// name and UID (and resourceVersion rv, where the watch stands): the
// informer deletes it by its key, and a Predicate drops the event by its
// UID. Called with f.mu held.
func (f *follower) leaving(removed []bool, rv string) []runtime.Object {
	var out []runtime.Object
	for k, o := range f.known {
		if o.i < 0 || !removed[o.i] {
			continue
		}
		gone := f.example.DeepCopyObject()
		obj, err := meta.Accessor(gone)
		if err != nil {
			continue
		}
		ns, name, _ := toolscache.SplitMetaNamespaceKey(k)
		obj.SetNamespace(ns)
		obj.SetName(name)
		obj.SetUID(o.uid)
		obj.SetResourceVersion(rv)
		if f.child {
			v := rangeLabelValue(o.i, len(f.ranges))
			obj.SetLabels(map[string]string{RangeLabel: v})
		}
		out = append(out, gone)
	}
	return out
}

// fail ends the watch with an "expired" error, after which the informer
// lists again, with the ranges held then.
func (w *followWatch) fail(ctx context.Context, err error) bool {
	w.f.tracef("fail gen %d: %v", w.gen, err)
	if ctx.Err() != nil || errors.Is(err, errStopped) {
		return false
	}
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		// The server's own answer: the reflector lists again.
		status := apierrors.NewResourceExpired(err.Error()).ErrStatus
		w.send(watch.Event{Type: watch.Error, Object: &status})
		return false
	}
	log.FromContext(ctx).Info("could not follow the ranges held; listing them again", "kind", w.f.kind, "error", err.Error())
	status := apierrors.NewResourceExpired("shard: following the ranges held: " + err.Error()).ErrStatus
	w.send(watch.Event{Type: watch.Error, Object: &status})
	return false
}

func setWith(set []bool, n, i int) []bool {
	if set == nil {
		set = make([]bool, n)
	}
	set[i] = true
	return set
}

// followedInformer counts its objects in reconcilekit_shard_cached_objects
// while it runs.
type followedInformer struct {
	toolscache.SharedIndexInformer
	f *follower
}

// Run runs the informer until stopCh is closed.
func (i *followedInformer) Run(stopCh <-chan struct{}) {
	cached.add(i.f)
	defer cached.remove(i.f)
	i.SharedIndexInformer.Run(stopCh)
}

// RunWithContext runs the informer until ctx ends.
func (i *followedInformer) RunWithContext(ctx context.Context) {
	cached.add(i.f)
	defer cached.remove(i.f)
	i.SharedIndexInformer.RunWithContext(ctx)
}

// tracef records a step of the follower, for the model test's account of
// a sequence that fails; nothing when trace is nil.
func (s *followSpec) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace(fmt.Sprintf(format, args...))
	}
}
