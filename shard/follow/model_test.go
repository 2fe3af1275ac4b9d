package follow

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// The model test of the following cache: a real client-go informer over a
// follower over an API server in memory (fakeServer: lists, watches from a
// resourceVersion with replay, streamed lists with the initial-events
// bookmark, watches that end, compaction that makes an old resourceVersion
// "too old"), driven by random sequences of writes, range changes
// (acquired, lost, lost and acquired again before the cache can look) and
// watch endings. Once the sequence ends, the informer must hold what a
// plain informer of the ranges held would: every object of those ranges at
// its last version and nothing else; and it must have handed over every
// range it holds: every object of a range came to the handlers as an add
// after the range was last acquired, so that a controller whose events or
// requeues were dropped while the range was not held (Guard, Predicate)
// hears of every object again.

// fakeServer is the API server of one kind: ConfigMaps in namespace "ns".
type fakeServer struct {
	mu      sync.Mutex
	rv      uint64
	objs    map[string]*corev1.ConfigMap
	log     []watch.Event
	oldest  uint64 // a watch from before this resourceVersion is too old
	watches []*fakeWatch
	// watchList: the server streams lists (watch with initial events).
	watchList bool
	// selector returns the label selector controller-runtime would send
	// (for a child kind, the follower's range selector).
	selector func() string
	// down: the server is out of reach (a connection is refused).
	down atomic.Bool
}

// errRefused is what a client gets from a server that is not there.
var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func (s *fakeServer) write(typ watch.EventType, cm *corev1.ConfigMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	cm = cm.DeepCopy()
	cm.ResourceVersion = strconv.FormatUint(s.rv, 10)
	if typ == watch.Deleted {
		delete(s.objs, cm.Name)
	} else {
		s.objs[cm.Name] = cm
	}
	ev := watch.Event{Type: typ, Object: cm}
	s.log = append(s.log, ev)
	for _, w := range s.watches {
		w.offer(ev)
	}
}

// endWatches drops every watch, as a broken connection does.
func (s *fakeServer) endWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		w.end()
	}
	s.watches = nil
}

// restart ends every watch and forgets the events so far: a watch from an
// older resourceVersion is answered "too old" (410), as after a restart.
func (s *fakeServer) restart() {
	s.mu.Lock()
	s.oldest = s.rv + 1
	s.log = nil
	s.mu.Unlock()
	s.endWatches()
}

func (s *fakeServer) match(opts metav1.ListOptions) (func(*corev1.ConfigMap) bool, error) {
	sel := opts.LabelSelector
	if s.selector != nil {
		sel = s.selector()
	}
	ls, err := labels.Parse(sel)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return func(cm *corev1.ConfigMap) bool { return ls.Matches(labels.Set(cm.Labels)) }, nil
}

func (s *fakeServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *fakeServer) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if s.down.Load() {
		return nil, errRefused
	}
	match, err := s.match(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.rv, 10)}}
	for _, name := range slices.Sorted(mapsKeys(s.objs)) {
		if cm := s.objs[name]; match(cm) {
			l.Items = append(l.Items, *cm.DeepCopy())
		}
	}
	return l, nil
}

func mapsKeys(m map[string]*corev1.ConfigMap) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *fakeServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s *fakeServer) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if s.down.Load() {
		return nil, errRefused
	}
	match, err := s.match(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &fakeWatch{match: match, out: make(chan watch.Event, 1<<16), done: make(chan struct{})}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	switch {
	case initial:
		for _, name := range slices.Sorted(mapsKeys(s.objs)) {
			w.offer(watch.Event{Type: watch.Added, Object: s.objs[name].DeepCopy()})
		}
		bm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(s.rv, 10),
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		w.out <- watch.Event{Type: watch.Bookmark, Object: bm}
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
	default:
		from, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if from+1 < s.oldest {
			st := apierrors.NewResourceExpired("too old resource version").ErrStatus
			w.out <- watch.Event{Type: watch.Error, Object: &st}
			w.end()
			return w, nil
		}
		for _, ev := range s.log {
			if rv, _ := strconv.ParseUint(ev.Object.(*corev1.ConfigMap).ResourceVersion, 10, 64); rv > from {
				w.offer(ev)
			}
		}
	}
	s.watches = append(s.watches, w)
	return w, nil
}

func (s *fakeServer) IsWatchListSemanticsUnSupported() bool { return !s.watchList }

// fakeWatch is one watch of the fakeServer. Its channel is large enough
// for every event of a test: the server never blocks on a slow watcher.
type fakeWatch struct {
	match    func(*corev1.ConfigMap) bool
	out      chan watch.Event
	done     chan struct{}
	once     sync.Once
	stopOnce sync.Once
}

// offer sends ev if it matches the watch's selector. Called with the
// server's lock held.
func (w *fakeWatch) offer(ev watch.Event) {
	if !w.match(ev.Object.(*corev1.ConfigMap)) {
		return
	}
	select {
	case <-w.done:
	default:
		w.out <- watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()}
	}
}

func (w *fakeWatch) end() {
	w.once.Do(func() { close(w.done); close(w.out) })
}

func (w *fakeWatch) Stop()                          { w.stopOnce.Do(func() {}) }
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.out }

// handed records what the informer's handlers were told, in one sequence
// with the range changes.
type handed struct {
	seq  *atomic.Int64
	mu   sync.Mutex
	adds map[string]int64 // name -> sequence number of the last add
}

func (h *handed) OnAdd(obj any, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.adds[obj.(*corev1.ConfigMap).Name] = h.seq.Add(1)
}
func (h *handed) OnUpdate(_, _ any) {}
func (h *handed) OnDelete(_ any)    {}

// modelHolder holds ranges as a test says, numbering its holdings as a
// shard.Member does, and tells every watch of each change.
type modelHolder struct {
	mu       sync.Mutex
	holdings []uint64
	epochs   uint64
	watchers map[chan struct{}]bool
}

func newModelHolder(n int) *modelHolder {
	return &modelHolder{holdings: make([]uint64, n), watchers: map[chan struct{}]bool{}}
}

func (m *modelHolder) Holdings() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.holdings)
}

func (m *modelHolder) Notify() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers[ch] = true
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	}
}

func (m *modelHolder) Group() string { return "model" }

func (m *modelHolder) set(i int, epoch uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holdings[i] = epoch
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (m *modelHolder) acquire(i int) {
	m.mu.Lock()
	m.epochs++
	e := m.epochs
	m.mu.Unlock()
	m.set(i, e)
}

func (m *modelHolder) lose(i int) { m.set(i, 0) }

// modelRun is one random sequence, from seed.
func modelRun(t *testing.T, seed uint64, child, watchList bool) {
	const n = 4
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	m := newModelHolder(n)
	split, _ := ranges.Split(n)
	spec := &followSpec{h: m, n: n, ranges: split, child: child, kind: "*v1.ConfigMap"}
	srv := &fakeServer{objs: map[string]*corev1.ConfigMap{}, watchList: watchList}
	if child {
		rs := rangeSelector{spec}
		srv.selector = rs.String
	}
	fl := &follower{followSpec: spec, inner: srv, lw: srv, example: &corev1.ConfigMap{}, known: map[string]known{}}
	var seq atomic.Int64
	h := &handed{seq: &seq, adds: map[string]int64{}}
	inf := toolscache.NewSharedIndexInformer(fl, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acquiredAt := map[int]int64{}
	holdings := map[int]bool{}
	acquire := func(i int) {
		holdings[i] = true
		acquiredAt[i] = seq.Add(1)
		m.acquire(i)
	}
	lose := func(i int) {
		delete(holdings, i)
		m.lose(i)
	}
	// Objects: for a child kind labelled with a range (as an owner's
	// child would be); for an object kind, its UID decides.
	var trace []string
	var traceMu sync.Mutex
	spec.trace = func(line string) {
		traceMu.Lock()
		trace = append(trace, "    follower: "+line)
		traceMu.Unlock()
	}
	step := func(what string) {
		traceMu.Lock()
		trace = append(trace, what)
		traceMu.Unlock()
	}
	nextName := 0
	newObj := func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", nextName),
			UID: types.UID(uuid.NewUUID())}, Data: map[string]string{"v": "0"}}
		nextName++
		if child {
			cm.Labels = map[string]string{RangeLabel: rangeLabelValue(rnd.IntN(n), n)}
		}
		srv.write(watch.Added, cm)
		step("create " + cm.Name)
	}
	for range 10 {
		newObj()
	}
	acquire(rnd.IntN(n))
	go inf.RunWithContext(ctx)
	for !inf.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	pick := func() *corev1.ConfigMap {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		names := slices.Sorted(mapsKeys(srv.objs))
		if len(names) == 0 {
			return nil
		}
		return srv.objs[names[rnd.IntN(len(names))]].DeepCopy()
	}
	disruptions := 0
	for range 40 {
		switch op := rnd.IntN(100); {
		case op < 30:
			if cm := pick(); cm != nil {
				v, _ := strconv.Atoi(cm.Data["v"])
				cm.Data["v"] = strconv.Itoa(v + 1)
				srv.write(watch.Modified, cm)
				step("update " + cm.Name)
			}
		case op < 40:
			newObj()
		case op < 47:
			if cm := pick(); cm != nil {
				srv.write(watch.Deleted, cm)
				step("delete " + cm.Name)
			}
		case op < 62:
			i := rnd.IntN(n)
			if !holdings[i] {
				acquire(i)
				step(fmt.Sprintf("acquire %d", i))
			} else {
				lose(i)
				step(fmt.Sprintf("lose %d", i))
			}
		case op < 72:
			// Lost and acquired again at once: the cache may never see
			// the range go, but its objects' events were dropped while
			// it was not held.
			i := rnd.IntN(n)
			if holdings[i] {
				lose(i)
			}
			acquire(i)
			step(fmt.Sprintf("lapse %d", i))
		case op < 82 && disruptions < 3:
			disruptions++
			srv.endWatches()
			step("watches end")
		case op < 86 && disruptions < 3:
			disruptions++
			srv.restart()
			step("restart (too old resource version)")
		case op < 92 && disruptions < 3:
			// Down a while: every list and watch refused, the ranges
			// changing meanwhile, then up again having forgotten its
			// events.
			disruptions++
			srv.down.Store(true)
			srv.restart()
			d := time.Duration(50+rnd.IntN(400)) * time.Millisecond
			if i := rnd.IntN(n); holdings[i] && rnd.IntN(2) == 0 {
				lose(i)
				step(fmt.Sprintf("down %s, losing %d", d, i))
			} else {
				step(fmt.Sprintf("down %s", d))
			}
			time.Sleep(d)
			srv.down.Store(false)
		default:
			time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
			step("pause")
		}
	}

	// What a plain informer of the ranges held would hold, and the hand-over.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var problems []string
		srv.mu.Lock()
		want := map[string]string{}
		for name, cm := range srv.objs {
			if i := spec.index(cm); i >= 0 && holdings[i] {
				want[name] = cm.ResourceVersion
			}
		}
		srv.mu.Unlock()
		got := map[string]string{}
		for _, o := range inf.GetStore().List() {
			cm := o.(*corev1.ConfigMap)
			got[cm.Name] = cm.ResourceVersion
		}
		for name, rv := range want {
			if got[name] != rv {
				problems = append(problems, fmt.Sprintf("%s: cached at %q, want %q", name, got[name], rv))
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				problems = append(problems, fmt.Sprintf("%s: cached, of no range held", name))
			}
		}
		h.mu.Lock()
		srv.mu.Lock()
		for name := range want {
			i := spec.index(srv.objs[name])
			if h.adds[name] < acquiredAt[i] {
				problems = append(problems, fmt.Sprintf("%s: range %d acquired at %d, last handed over as an add at %d", name, i, acquiredAt[i], h.adds[name]))
			}
		}
		srv.mu.Unlock()
		h.mu.Unlock()
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(problems)
			fl.mu.Lock()
			state := fmt.Sprintf("held %v, covered %v, %d known, list or watch %d", m.Holdings(), fl.covered, len(fl.known), fl.gen)
			fl.mu.Unlock()
			t.Fatalf("seed %d (child %v, streamed lists %v): after\n  %s\nthe informer differs from a plain informer of the ranges held (%s):\n  %s",
				seed, child, watchList, strings.Join(trace, "\n  "), state, strings.Join(problems, "\n  "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// modelSeeds is how many sequences TestFollowerAgainstAPlainInformer runs
// per kind and list mode.
var modelSeeds = flag.Int("model.seeds", 6, "random sequences of the follower's model test, per kind and list mode")

// TestFollowerAgainstAPlainInformer runs the model over fixed seeds, for
// objects and children, with streamed lists and with lists then watches.
func TestFollowerAgainstAPlainInformer(t *testing.T) {
	seeds := *modelSeeds
	if testing.Short() {
		seeds = 2
	}
	for _, child := range []bool{false, true} {
		for _, wl := range []bool{true, false} {
			t.Run(fmt.Sprintf("child=%v,streamed=%v", child, wl), func(t *testing.T) {
				t.Parallel()
				for seed := range uint64(seeds) {
					modelRun(t, seed, child, wl)
				}
			})
		}
	}
}

// FuzzFollower explores the model with seeds of the fuzzer's choosing.
func FuzzFollower(f *testing.F) {
	f.Add(uint64(1), false, true)
	f.Add(uint64(2), true, false)
	f.Fuzz(func(t *testing.T, seed uint64, child, watchList bool) {
		modelRun(t, seed, child, watchList)
	})
}

// TestOnlyARefusalOfTheSelectorTurnsItOff: a list that fails for another
// reason (a server restarting, 503, 429, a connection refused) leaves the
// ShardSelector on; kube-apiserver's refusal (500 "invalid shard
// selector") and a bad request turn it off.
func TestOnlyARefusalOfTheSelectorTurnsItOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"kube-apiserver 1.37", apierrors.NewInternalError(fmt.Errorf("invalid shard selector: CEL parse error")), true},
		{"bad request", apierrors.NewBadRequest("unknown parameter shardSelector"), true},
		{"unavailable", apierrors.NewServiceUnavailable("the server is currently unable to handle the request"), false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"connection refused", fmt.Errorf("dial tcp 127.0.0.1:6443: connect: connection refused"), false},
		{"internal", apierrors.NewInternalError(fmt.Errorf("etcdserver: leader changed")), false},
	} {
		if got := refusal(tc.err); got != tc.want {
			t.Errorf("%s: refusal(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
