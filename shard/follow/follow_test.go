package follow_test

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
)

// server says what the API server does with a ShardSelector, as the
// informers see it: the gated envtest honours it; the other two are made
// from it by a ListerWatcher under the one Member.WrapCacheOptions adds.
type server int

const (
	honours server = iota
	ignores        // the selector is dropped before the request
	refuses        // a request with a selector fails, as a malformed one does
)

// serverSide returns NewInformer wrapped so that the ListerWatcher under
// opts's own (controller-runtime's) does what the server does.
func serverSide(opts cache.Options, s server, watchList bool) cache.Options {
	next := opts.NewInformer
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		var inner toolscache.ListerWatcher = lw
		if s != honours {
			inner = asServer{toolscache.ToListerWatcherWithContext(lw), s}
		}
		if !watchList {
			inner = shardtest.NoWatchList{ListerWatcher: inner}
		}
		return next(inner, obj, resync, idx)
	}
	return opts
}

type asServer struct {
	toolscache.ListerWatcherWithContext
	s server
}

func (a asServer) serve(opts *metav1.ListOptions) error {
	if opts.ShardSelector == "" {
		return nil
	}
	if a.s == refuses {
		return apierrors.NewInternalError(fmt.Errorf("invalid shard selector: %q", opts.ShardSelector))
	}
	opts.ShardSelector = ""
	return nil
}

func (a asServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	return a.ListWithContext(context.Background(), opts)
}

func (a asServer) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := a.serve(&opts); err != nil {
		return nil, err
	}
	return a.ListerWatcherWithContext.ListWithContext(ctx, opts)
}

func (a asServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return a.WatchWithContext(context.Background(), opts)
}

func (a asServer) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := a.serve(&opts); err != nil {
		return nil, err
	}
	return a.ListerWatcherWithContext.WatchWithContext(ctx, opts)
}

// TestCachesFollowTheRangesTheirMembersHold runs replicas whose caches
// follow their Members' ranges (Widgets by UID, their ConfigMaps by the
// owner's range label, the cache's own label selector kept) while one
// replica becomes three and then two, and Widgets come and go: once the
// ranges settle, each cache holds exactly the Widgets of the ranges its
// Member holds and their ConfigMaps, so every object is cached by exactly
// one replica, and a ConfigMap without the label by none; what a cache
// holds is reconcilekit_shard_cached_objects. The same on a server that
// ignores the selector and one that refuses it (filtered in the process),
// and with lists then watches as with streamed lists. The caches' transform
// rewrites in place what the follower reads of each object, as transforms
// may (diet.Intern does): the follower reads an object before the informer
// has it, never after (go test -race).
func TestCachesFollowTheRangesTheirMembersHold(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         server
		watchList bool
	}{
		{"honoured, streamed lists", honours, true},
		{"honoured, lists then watches", honours, false},
		{"ignored", ignores, true},
		{"refused", refuses, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testCachesFollow(t, tc.s, tc.watchList) })
	}
}

// followed is one replica: its Member, how to stop it, and its cache.
type followed struct {
	m    *shard.Member
	stop func()
	c    cache.Cache
}

// testRanges is how many ranges the tests split the hash space into.
const testRanges = 6

// settleLimit bounds the waits for the caches to follow their ranges.
const settleLimit = 10 * time.Second

func testCachesFollow(t *testing.T, s server, watchList bool) {
	e := env.Require(t)
	c := e.Client(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	const group = "widgets"
	labeler := shard.NewMember(cs.CoordinationV1(), shardtest.FieldOwner)
	labeler.RangeCount = testRanges

	// Widgets, each with a labelled ConfigMap, and one ConfigMap without
	// the label; the cache's own selector (app=widgets) keeps out a
	// ConfigMap labelled with a range but not with app.
	var widgets []client.Object
	addWidgets := func(prefix string, n int) {
		t.Helper()
		made := shardtest.Create(t, c, ns, prefix, n, shardtest.NewWidget)
		for _, w := range made {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName(), Namespace: ns, Labels: map[string]string{"app": "widgets"}}}
			if err := follow.Label(labeler, w, cm); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
		}
		widgets = append(widgets, made...)
	}
	addWidgets("w", 60)
	stray := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "no-range", Namespace: ns, Labels: map[string]string{"app": "widgets"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-app", Namespace: ns, Labels: map[string]string{follow.RangeLabel: "0-of-6"}}},
	}
	for _, cm := range stray {
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}

	app, _ := labels.Parse("app=widgets")
	var (
		mu       sync.Mutex
		replicas = map[string]*followed{}
	)
	start := func(name string) {
		t.Helper()
		m, stopMember := shardtest.StartMember(t, cs.CoordinationV1(), ns, group, name, testRanges, shardtest.Short)
		opts, err := follow.CacheOptions(cache.Options{
			Scheme:            e.Scheme,
			DefaultTransform:  rewriteInPlace,
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: app}},
		}, m, follow.Kinds{Objects: []client.Object{&testapi.Widget{}}, Children: []client.Object{&corev1.ConfigMap{}}})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := cache.New(e.Config, serverSide(opts, s, watchList))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = cc.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-stopped })
		for _, obj := range []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}} {
			if _, err := cc.GetInformer(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		if !cc.WaitForCacheSync(ctx) {
			t.Fatal("the cache did not sync")
		}
		mu.Lock()
		replicas[name] = &followed{m, stopMember, cc}
		mu.Unlock()
	}
	stop := func(name string) {
		mu.Lock()
		f := replicas[name]
		delete(replicas, name)
		mu.Unlock()
		f.stop()
	}
	// settled waits until each cache holds what its Member's ranges hold.
	settled := func(when string) {
		t.Helper()
		var diffs []string
		deadline := time.Now().Add(settleLimit)
		for {
			diffs = nil
			mu.Lock()
			for name, f := range replicas {
				held := f.m.Held()
				want := shardtest.NamesIn(widgets, held)
				var ws testapi.WidgetList
				var cms corev1.ConfigMapList
				if err := f.c.List(t.Context(), &ws); err != nil {
					t.Fatal(err)
				}
				if err := f.c.List(t.Context(), &cms); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, shardtest.Names(t, &ws)); d != "" {
					diffs = append(diffs, fmt.Sprintf("%s's Widgets (-in its ranges %s +cached):\n%s", name, held, d))
				}
				if d := cmp.Diff(want, shardtest.Names(t, &cms)); d != "" {
					diffs = append(diffs, fmt.Sprintf("%s's ConfigMaps (-of its Widgets +cached):\n%s", name, d))
				}
			}
			mu.Unlock()
			if len(diffs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the caches did not follow their ranges within %s:\n%s", when, settleLimit, diffs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// Every Widget and its ConfigMap cached once, by one replica.
		for _, kind := range []string{fmt.Sprintf("%T", &testapi.Widget{}), fmt.Sprintf("%T", &corev1.ConfigMap{})} {
			var got float64
			for range 100 {
				if got = metricstest.Value(t, "reconcilekit_shard_cached_objects", map[string]string{"group": group, "kind": kind}); got == float64(len(widgets)) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got != float64(len(widgets)) {
				t.Errorf("%s: reconcilekit_shard_cached_objects{kind=%q} = %v; want %d, each object cached once", when, kind, got, len(widgets))
			}
		}
	}

	start("a")
	settled("one replica")
	start("b")
	start("c")
	waitBalanced(t, replicas, "a", "b", "c")
	settled("three replicas")
	addWidgets("x", 30)
	if err := c.Delete(t.Context(), widgets[0]); err != nil {
		t.Fatal(err)
	}
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: widgets[0].GetName(), Namespace: ns}}
	if err := c.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	widgets = widgets[1:]
	settled("three replicas, Widgets added and deleted")
	stop("c")
	waitBalanced(t, replicas, "a", "b")
	settled("two replicas")

	var counts []string
	mu.Lock()
	for name, f := range replicas {
		var ws testapi.WidgetList
		if err := f.c.List(t.Context(), &ws); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, fmt.Sprintf("%s %d", name, len(ws.Items)))
	}
	mu.Unlock()
	sort.Strings(counts)
	t.Logf("%d Widgets and their ConfigMaps, each cached by one replica: %v", len(widgets), counts)
}

// TestFollowRefusesWhatItCannotDo: bad settings are errors, not surprises.
func TestFollowRefusesWhatItCannotDo(t *testing.T) {
	pod := &corev1.Pod{}
	nsLabel, _ := labels.Parse("a=b")
	holding := func(n int) *shard.Member { m := shard.NewMember(nil, shardtest.FieldOwner); m.RangeCount = n; return m }
	for _, tc := range []struct {
		name string
		m    *shard.Member
		opts cache.Options
		k    follow.Kinds
		want string
	}{
		{"no ranges", holding(0), cache.Options{}, follow.Kinds{Objects: []client.Object{pod}}, "ranges"},
		{"no kinds", holding(2), cache.Options{}, follow.Kinds{}, "no kinds"},
		{"a kind twice", holding(2), cache.Options{}, follow.Kinds{Objects: []client.Object{pod}, Children: []client.Object{&corev1.Pod{}}}, "twice"},
		{"per-namespace labels", holding(2), cache.Options{ByObject: map[client.Object]cache.ByObject{pod: {
			Namespaces: map[string]cache.Config{"x": {LabelSelector: nsLabel}}}}},
			follow.Kinds{Children: []client.Object{pod}}, "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := follow.CacheOptions(tc.opts, tc.m, tc.k)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CacheOptions: %v; want an error saying %q", err, tc.want)
			}
		})
	}
	m := holding(4)
	if err := follow.Label(m, &testapi.Widget{}, &corev1.Pod{}); err == nil {
		t.Error("Label of an owner without a UID: no error")
	}
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: uuid.NewUUID()}}
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "me"}}}
	if err := follow.Label(m, owner, child); err != nil {
		t.Fatal(err)
	}
	i, _ := ranges.Of(owner, 4)
	// RangeLabel alone, the key followers select by; the child's other
	// labels kept.
	v := fmt.Sprintf("%d-of-4", i)
	if want := map[string]string{"keep": "me", follow.RangeLabel: v}; !cmp.Equal(child.Labels, want) {
		t.Errorf("labels after Label: %v; want %v", child.Labels, want)
	}
	if err := follow.Label(holding(0), owner, child); err == nil {
		t.Error("Label with no ranges: no error")
	}
}

// waitBalanced waits until the replicas named hold every range once
// between them, each its share.
func waitBalanced(t *testing.T, replicas map[string]*followed, names ...string) {
	t.Helper()
	var ms []*shard.Member
	for _, n := range names {
		ms = append(ms, replicas[n].m)
	}
	shardtest.WaitBalanced(t, settleLimit, ms...)
}

// rewriteInPlace is a cache transform that writes, in place, the fields the
// follower reads of an object, each with an equal value of its own.
func rewriteInPlace(in any) (any, error) {
	if o, ok := in.(metav1.Object); ok {
		o.SetNamespace(strings.Clone(o.GetNamespace()))
		o.SetName(strings.Clone(o.GetName()))
		o.SetUID(types.UID(strings.Clone(string(o.GetUID()))))
		o.SetResourceVersion(strings.Clone(o.GetResourceVersion()))
		o.SetLabels(maps.Clone(o.GetLabels()))
		o.SetAnnotations(maps.Clone(o.GetAnnotations()))
	}
	return in, nil
}
