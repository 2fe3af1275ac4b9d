package diet_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// The shapes the At operator caches: a custom resource the operator
// reconciles (created by a user, its finalizer and status written by the
// operator, with a condition) and the Pod it creates (finished, its status
// written by a kubelet).
const (
	creatorManager  = "kubectl-create"
	operatorManager = "app-controller"
	kubeletManager  = "kubelet"
)

// populate creates n Widgets and n Pods in ns as the At operator's life
// leaves them, 8 at a time.
func populate(tb testing.TB, c client.Client, ns string, n int) {
	tb.Helper()
	ctx := context.Background()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	for range 8 {
		wg.Go(func() {
			for i := range work {
				w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%05d", i)},
					Spec: testapi.WidgetSpec{Message: "echo hello"}}
				if err := c.Create(ctx, w, client.FieldOwner(creatorManager)); err != nil {
					fail(err)
					return
				}
				before := w.DeepCopy()
				w.Finalizers = []string{"example.com/cleanup"}
				if err := c.Patch(ctx, w, client.MergeFrom(before), client.FieldOwner(operatorManager)); err != nil {
					fail(err)
					return
				}
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.Name + "-pod", Labels: map[string]string{"example.com/owner": string(w.UID)},
						OwnerReferences: []metav1.OwnerReference{{APIVersion: testapi.GroupVersion.String(), Kind: "Widget", Name: w.Name, UID: w.UID,
							Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "command", Image: "busybox:1.36", Command: []string{"/bin/sh", "-c", "echo hello"}}}},
				}
				if err := c.Create(ctx, pod, client.FieldOwner(operatorManager)); err != nil {
					fail(err)
					return
				}
				now := metav1.Now()
				pod.Status.Phase = corev1.PodSucceeded
				pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command", Image: "busybox:1.36",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}
				if err := c.Status().Update(ctx, pod, client.FieldOwner(kubeletManager)); err != nil {
					fail(err)
					return
				}
				before = w.DeepCopy()
				w.Status = testapi.WidgetStatus{ObservedGeneration: 1, Phase: "Done", Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue,
					Reason: "CommandSucceeded", Message: "pod " + pod.Name + " ran the command successfully", ObservedGeneration: 1,
					LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}}}
				if err := c.Status().Patch(ctx, w, client.MergeFrom(before), client.FieldOwner(operatorManager)); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		tb.Fatal(first)
	}
}

// startCache starts a cache of ns with opts holding Widgets and Pods, and
// returns it once synced; it stops when stop is called.
func startCache(tb testing.TB, ns string, opts cache.Options) (c cache.Cache, stop func()) {
	tb.Helper()
	opts.Scheme = env.Scheme
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	c, err := cache.New(env.Config, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, obj := range []client.Object{&testapi.Widget{}, &corev1.Pod{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			tb.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(ctx) })
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the cache did not sync")
	}
	return c, func() { cancel(); wg.Wait() }
}

// diets are the caches compared: whole, all managedFields stripped, on the
// diet, and on the diet with Pods kept to their phase and exit code, those
// parts stored as Go structs of their type (before Compact) and compact
// (as diet.CacheOptions stores them).
func diets(tb testing.TB) []struct {
	name string
	opts cache.Options
} {
	tb.Helper()
	onDiet, err := diet.CacheOptions(cache.Options{}, operatorManager)
	if err != nil {
		tb.Fatal(err)
	}
	pods, err := diet.Fields(&corev1.Pod{}, "status.phase", "status.containerStatuses.state.terminated.exitCode")
	if err != nil {
		tb.Fatal(err)
	}
	withParts, err := diet.CacheOptions(cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: pods}}}, operatorManager)
	if err != nil {
		tb.Fatal(err)
	}
	notCompact := withParts
	notCompact.NewInformer = nil
	return []struct {
		name string
		opts cache.Options
	}{
		{"whole", cache.Options{}},
		{"managedFields stripped", cache.Options{DefaultTransform: cache.TransformStripManagedFields()}},
		{"on the diet", onDiet},
		{"on the diet, Pods in part, not compact", notCompact},
		{"on the diet, Pods in part", withParts},
	}
}

// TestACacheOnTheDietHoldsWhatItKeeps: through a manager's cache on the
// diet, the operator's Widget keeps the operator's managedFields entry and
// nothing else of managedFields, its spec and status whole; its Pod, kept
// in part, its metadata, phase and exit code.
func TestACacheOnTheDietHoldsWhatItKeeps(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	c := env.Client(t)
	populate(t, c, ns, 1)
	opts := diets(t)[4].opts
	cached, stop := startCache(t, ns, opts)
	defer stop()
	w := &testapi.Widget{}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return cached.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-00000"}, w) == nil, nil
	}); err != nil {
		t.Fatal("the cache never held the Widget")
	}
	if got := managers(w.ManagedFields); len(got) != 1 || got[0] != operatorManager+"/Update" {
		t.Errorf("the Widget's managedFields keep %v, want only %s's own entry", got, operatorManager)
	}
	if w.Spec.Message != "echo hello" || w.Status.Phase != "Done" || len(w.Status.Conditions) != 1 || len(w.Finalizers) != 1 {
		t.Errorf("the Widget lost more than managedFields: %+v", w)
	}
	pod := &corev1.Pod{}
	if err := cached.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-00000-pod"}, pod); err != nil {
		t.Fatal(err)
	}
	if !diet.IsPartial(pod) || len(pod.Spec.Containers) != 0 || pod.Status.Phase != corev1.PodSucceeded ||
		pod.Status.ContainerStatuses[0].State.Terminated.ExitCode != 0 || len(pod.OwnerReferences) != 1 || len(pod.Labels) != 1 {
		t.Errorf("the Pod is not its part: %+v", pod)
	}
}

// heapAlloc is the Go heap in use after two collections.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCachedBytesPerObject measures what a manager's cache holds per
// object, on the shapes of the At operator (a custom resource with its
// creator's, the operator's and the status entries in managedFields and a
// condition; a finished Pod the operator created): 1,000 of each on a real
// API server, cached whole, with managedFields stripped, on the diet, and on
// the diet with Pods kept to their phase and exit code. The figure is the
// Go heap the cache holds after a collection, per object; the objects are
// created once (the b.N loop reports the same measurement).
//
//	go test -run '^$' -bench CachedBytes ./diet/
func BenchmarkCachedBytesPerObject(b *testing.B) {
	env.Require(b)
	const n = 1000
	ns := env.Namespace(b)
	populate(b, env.Client(b), ns, n)
	for _, d := range diets(b) {
		for _, kind := range []client.Object{&testapi.Widget{}, &corev1.Pod{}} {
			b.Run(fmt.Sprintf("%T/%s", kind, d.name), func(b *testing.B) {
				var perObject float64
				for range b.N {
					opts := d.opts
					opts.ByObject = nil
					for obj, bo := range d.opts.ByObject {
						if fmt.Sprintf("%T", obj) == fmt.Sprintf("%T", kind) {
							opts.ByObject = map[client.Object]cache.ByObject{obj: bo}
						}
					}
					before := heapAlloc()
					c, stop := startCacheOf(b, ns, opts, kind)
					perObject = float64(heapAlloc()-before) / n
					runtime.KeepAlive(c)
					stop()
				}
				b.ReportMetric(perObject, "B/object")
			})
		}
	}
}

// startCacheOf is startCache for one kind.
func startCacheOf(tb testing.TB, ns string, opts cache.Options, kind client.Object) (cache.Cache, func()) {
	tb.Helper()
	opts.Scheme = env.Scheme
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	c, err := cache.New(env.Config, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.GetInformer(ctx, kind); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(ctx) })
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the cache did not sync")
	}
	return c, func() { cancel(); wg.Wait() }
}

// TestACompactCacheHandsOutWhatAStructCacheWould: a cache that stores the
// Pods' parts compact (diet.CacheOptions) hands every reader what a cache
// of the same parts as Go structs does: Get, List by label and by a field
// index (ownership's), with and without a copy, and events; a reader that
// changes what it got changes nothing in the cache.
func TestACompactCacheHandsOutWhatAStructCacheWould(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	c := env.Client(t)
	populate(t, c, ns, 3)
	byName := map[string]cache.Options{}
	for _, d := range diets(t) {
		byName[d.name] = d.opts
	}
	type seen struct {
		kind    string
		partial bool
	}
	var mu sync.Mutex
	var events []seen
	start := func(opts cache.Options, record bool) cache.Cache {
		opts.Scheme = env.Scheme
		opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
		cc, err := cache.New(env.Config, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := ownership.IndexOwner(ctx, cc, &corev1.Pod{}); err != nil {
			t.Fatal(err)
		}
		if record {
			inf, err := cc.GetInformer(ctx, &corev1.Pod{})
			if err != nil {
				t.Fatal(err)
			}
			note := func(obj any) {
				mu.Lock()
				defer mu.Unlock()
				pod, ok := obj.(*corev1.Pod)
				events = append(events, seen{fmt.Sprintf("%T", obj), ok && diet.IsPartial(pod)})
			}
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }, DeleteFunc: note}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = cc.Start(ctx) })
		t.Cleanup(func() { cancel(); wg.Wait() })
		if !cc.WaitForCacheSync(ctx) {
			t.Fatal("the cache did not sync")
		}
		return cc
	}
	compact := start(byName["on the diet, Pods in part"], true)
	structs := start(byName["on the diet, Pods in part, not compact"], false)

	w := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-00001"}, w); err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		read func(cache.Cache) (any, error)
	}{
		{"Get", func(cc cache.Cache) (any, error) {
			pod := &corev1.Pod{}
			return pod, cc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-00001-pod"}, pod)
		}},
		{"Get without a copy", func(cc cache.Cache) (any, error) {
			pod := &corev1.Pod{}
			return pod, cc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-00001-pod"}, pod, client.UnsafeDisableDeepCopy)
		}},
		{"List by label", func(cc cache.Cache) (any, error) {
			list := &corev1.PodList{}
			return list, cc.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{"example.com/owner": string(w.UID)})
		}},
		{"List by owner (a field index)", func(cc cache.Cache) (any, error) {
			list := &corev1.PodList{}
			return list, ownership.ListOwned(t.Context(), cc, w, list)
		}},
		{"List all", func(cc cache.Cache) (any, error) {
			list := &corev1.PodList{}
			return list, cc.List(t.Context(), list, client.InNamespace(ns))
		}},
	}
	for _, r := range reads {
		want, err := r.read(structs)
		if err != nil {
			t.Fatalf("%s from the cache of structs: %v", r.name, err)
		}
		got, err := r.read(compact)
		if err != nil {
			t.Errorf("%s from the compact cache: %v", r.name, err)
			continue
		}
		for _, l := range []any{want, got} {
			if list, ok := l.(*corev1.PodList); ok {
				slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the compact cache hands out (-structs +compact):\n%s", r.name, diff)
		}
		if list, ok := got.(*corev1.PodList); ok && len(list.Items) == 0 {
			t.Errorf("%s found nothing", r.name)
		}
	}

	// What a reader changes stays with it.
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: ns, Name: "w-00002-pod"}
	if err := compact.Get(t.Context(), key, pod, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	pod.Labels["changed"] = "by a reader"
	pod.Status.Phase = corev1.PodFailed
	again := &corev1.Pod{}
	if err := compact.Get(t.Context(), key, again); err != nil {
		t.Fatal(err)
	}
	if again.Labels["changed"] != "" || again.Status.Phase != corev1.PodSucceeded {
		t.Errorf("a reader's change reached the cache: %v, %s", again.Labels, again.Status.Phase)
	}

	// Events carry parts of the Pod's type: an update, then a deletion.
	live := &corev1.Pod{}
	if err := c.Get(t.Context(), key, live); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()
	live.Labels["touched"] = "yes"
	if err := c.Patch(t.Context(), live, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), live, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(compact.Get(ctx, key, &corev1.Pod{})), nil
	}); err != nil {
		t.Fatal("the compact cache never saw the Pod deleted")
	}
	// The handlers run after the store has changed, on their own
	// goroutine: wait for them too.
	_ = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= 3+2, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 3+2 {
		t.Errorf("the handler saw %d events, want the 3 adds, an update and a deletion: %v", len(events), events)
	}
	for _, e := range events {
		if e.kind != "*v1.Pod" || !e.partial {
			t.Errorf("a handler was given %s (a part: %v), want the Pod's part", e.kind, e.partial)
		}
	}
}

// TestACacheForgetsTheStringsOfObjectsThatAreGone: the strings Intern
// shares among a cache's objects (their namespace's name, their finalizer,
// their managers) are kept while a cached object holds them, and forgotten
// once the objects are deleted, as the gauge
// reconcilekit_diet_intern_entries says: an operator whose objects come
// and go in namespaces of their own keeps no string of a namespace gone.
func TestACacheForgetsTheStringsOfObjectsThatAreGone(t *testing.T) {
	env.Require(t)
	gauge := func() float64 { return metricstest.Settled(t, "reconcilekit_diet_intern_entries", nil) }
	ns := env.Namespace(t)
	c := env.Client(t)
	cached, stop := startCacheOf(t, ns, cache.Options{DefaultTransform: diet.Intern()}, &testapi.Widget{})
	defer stop()
	before := gauge()
	count := func() int {
		var l testapi.WidgetList
		if err := cached.List(t.Context(), &l); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	var ws []*testapi.Widget
	for i := range 3 {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%d", i),
			Labels: map[string]string{"team": "a"}}, Spec: testapi.WidgetSpec{Message: "echo hello"}}
		if err := c.Create(t.Context(), w, client.FieldOwner(creatorManager)); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return count() == len(ws), nil
	}); err != nil {
		t.Fatal("the cache never held the Widgets")
	}
	if held := gauge() - before; held < 3 {
		t.Fatalf("with the Widgets cached, the table holds %v strings more than before, want their namespace, label and manager at least", held)
	}
	for _, w := range ws {
		if err := c.Delete(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return count() == 0, nil
	}); err != nil {
		t.Fatal("the cache still holds Widgets")
	}
	var held float64
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		held = gauge() - before
		return held <= 0, nil
	}); err != nil {
		t.Errorf("once every Widget is gone the table holds %v strings more than before, want none", held)
	}
}
