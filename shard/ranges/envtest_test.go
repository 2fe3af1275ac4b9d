package ranges_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// TestServerSelectsWhatContainsSays lists 200 Widgets (a custom resource)
// and 200 ConfigMaps by range, on kube-apiserver with the gate on, and
// checks that the server returns, for every range of several splits, the
// very objects Contains puts in it: no overlap, no loss.
func TestServerSelectsWhatContainsSays(t *testing.T) {
	e := env.Require(t)
	c := e.Client(t)
	ns := e.Namespace(t)
	kinds := []struct {
		name    string
		objs    []client.Object
		newList func() client.ObjectList
	}{
		{"widgets", shardtest.Create(t, c, ns, "w", 200, shardtest.NewWidget), func() client.ObjectList { return &testapi.WidgetList{} }},
		{"configmaps", shardtest.Create(t, c, ns, "cm", 200, shardtest.NewConfigMap), func() client.ObjectList { return &corev1.ConfigMapList{} }},
	}
	for _, k := range kinds {
		for _, n := range []int{1, 2, 3, 4, 7} {
			t.Run(fmt.Sprintf("%s in %d ranges", k.name, n), func(t *testing.T) {
				rs, err := ranges.Split(n)
				if err != nil {
					t.Fatal(err)
				}
				var counts []string
				seen := map[string]int{}
				for _, r := range rs {
					list := k.newList()
					if err := c.List(t.Context(), list, client.InNamespace(ns), r); err != nil {
						t.Fatalf("list %s with %s: %v", k.name, r.Selector(), err)
					}
					got := shardtest.Names(t, list)
					if diff := cmp.Diff(shardtest.NamesIn(k.objs, r), got); diff != "" {
						t.Errorf("range %s: the server's list differs from Contains (-contains +server):\n%s", r, diff)
					}
					for _, name := range got {
						seen[name]++
					}
					counts = append(counts, fmt.Sprint(len(got)))
				}
				if len(seen) != len(k.objs) {
					t.Errorf("the ranges' lists hold %d of %d objects", len(seen), len(k.objs))
				}
				for name, times := range seen {
					if times != 1 {
						t.Errorf("%s is in %d ranges' lists", name, times)
					}
				}
				t.Logf("%d %s by range: %s", len(k.objs), k.name, strings.Join(counts, " / "))
			})
		}
		t.Run(k.name+" in ranges 0 and 2 of 4, and in all of them", func(t *testing.T) {
			four, _ := ranges.Split(4)
			for _, held := range []ranges.Set{{four[0], four[2]}, {four[1], four[0], four[2]}, four} {
				list := k.newList()
				if err := c.List(t.Context(), list, client.InNamespace(ns), held); err != nil {
					t.Fatalf("list %s with %s: %v", k.name, held.Selector(), err)
				}
				if diff := cmp.Diff(shardtest.NamesIn(k.objs, held), shardtest.Names(t, list)); diff != "" {
					t.Errorf("ranges %s: the server's list differs from Contains (-contains +server):\n%s", held, diff)
				}
			}
		})
	}
}

// TestWatchDeliversOnlyItsRange watches Widgets with the selector of one
// half while 60 are created, updated and deleted: every event is of an
// object in the half, and every in-half object's three events arrive.
func TestWatchDeliversOnlyItsRange(t *testing.T) {
	e := env.Require(t)
	c := e.Client(t)
	ns := e.Namespace(t)
	two, _ := ranges.Split(2)
	half := two[0]
	w, err := c.Watch(t.Context(), &testapi.WidgetList{}, client.InNamespace(ns), half)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	objs := shardtest.Create(t, c, ns, "w", 60, shardtest.NewWidget)
	for _, o := range objs {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetLabels(map[string]string{"touched": "yes"})
		if err := c.Patch(t.Context(), o, patch); err != nil {
			t.Fatal(err)
		}
	}
	// Delete the objects in the half last: when the watch delivers the
	// last deletion, it has delivered everything sent before it.
	slices.SortStableFunc(objs, func(a, b client.Object) int {
		switch ia, ib := half.Contains(a), half.Contains(b); {
		case ia == ib:
			return 0
		case ib:
			return -1
		}
		return 1
	})
	for _, o := range objs {
		if err := c.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	last := objs[len(objs)-1]
	if !half.Contains(last) {
		t.Fatal("no Widget of 60 landed in the half")
	}

	want := map[string][]watch.EventType{}
	for _, name := range shardtest.NamesIn(objs, half) {
		want[name] = []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	}
	got := map[string][]watch.EventType{}
	timeout := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended early")
			}
			obj, isObj := ev.Object.(client.Object)
			if !isObj {
				t.Fatalf("watch event %s of a %T", ev.Type, ev.Object)
			}
			if !half.Contains(obj) {
				t.Errorf("watch with %s delivered %s of %s, whose UID hashes to %#x", half.Selector(), ev.Type, obj.GetName(), ranges.Hash(obj))
			}
			got[obj.GetName()] = append(got[obj.GetName()], ev.Type)
			done = ev.Type == watch.Deleted && obj.GetName() == last.GetName()
		case <-timeout:
			t.Fatalf("timed out; got events of %d objects, want %d", len(got), len(want))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events by object (-want +got):\n%s", diff)
	}
	t.Logf("60 Widgets created, updated and deleted; the watch of %s delivered the %d events of the %d in it, and nothing else",
		half, 3*len(want), len(want))
}

// TestCacheHoldsOnlyItsRange builds a controller-runtime cache through
// WrapCacheOptions for Widgets only: its Widget informer lists and watches
// one half (it holds, and its handlers hear of, nothing else), while its
// ConfigMap informer holds every ConfigMap. client-go's reflector streams
// its initial list through a watch (WatchListClient, on by default since
// client-go 1.35); the second case makes it list, then watch, as it does
// against servers that cannot stream.
func TestCacheHoldsOnlyItsRange(t *testing.T) {
	t.Run("watch-list", func(t *testing.T) { testCacheHoldsOnlyItsRange(t, nil) })
	t.Run("list then watch", func(t *testing.T) {
		testCacheHoldsOnlyItsRange(t, func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(shardtest.NoWatchList{ListerWatcher: lw}, obj, resync, idx)
		})
	})
}

func testCacheHoldsOnlyItsRange(t *testing.T, newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) {
	e := env.Require(t)
	c := e.Client(t)
	ns := e.Namespace(t)
	two, _ := ranges.Split(2)
	half := two[1]
	before := shardtest.Create(t, c, ns, "w", 100, shardtest.NewWidget)
	cms := shardtest.Create(t, c, ns, "cm", 20, shardtest.NewConfigMap)

	opts, err := ranges.CacheOptions(cache.Options{
		Scheme:            e.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer:       newInformer,
	}, ranges.Set{half}, &testapi.Widget{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cache.New(e.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inf, err := cc.GetInformer(ctx, &testapi.Widget{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		heard []client.Object
	)
	hear := func(o any) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, o.(client.Object))
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    hear,
		UpdateFunc: func(_, o any) { hear(o) },
		DeleteFunc: hear,
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cc.Start(ctx) }()
	if !cc.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	var widgets testapi.WidgetList
	if err := cc.List(ctx, &widgets); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shardtest.NamesIn(before, half), shardtest.Names(t, &widgets)); diff != "" {
		t.Errorf("cached Widgets after sync (-in the half +cached):\n%s", diff)
	}
	var configMaps corev1.ConfigMapList
	if err := cc.List(ctx, &configMaps); err != nil {
		t.Fatal(err)
	}
	if got := len(configMaps.Items); got < len(cms) {
		t.Errorf("the cache holds %d ConfigMaps; want every one of the %d (plus the namespace's root CA)", got, len(cms))
	}

	after := shardtest.Create(t, c, ns, "x", 40, shardtest.NewWidget)
	all := append(slices.Clone(before), after...)
	want := shardtest.NamesIn(all, half)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := cc.List(ctx, &widgets); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(shardtest.Names(t, &widgets), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cached Widgets (-in the half +cached):\n%s", cmp.Diff(want, shardtest.Names(t, &widgets)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, o := range heard {
		if !half.Contains(o) {
			t.Errorf("the Widget informer heard of %s, whose UID hashes to %#x, outside %s", o.GetName(), ranges.Hash(o), half)
		}
	}
	t.Logf("of 140 Widgets, the cache of %s holds %d and its handlers heard %d events; it holds all %d ConfigMaps",
		half, len(want), len(heard), len(configMaps.Items))
}

// TestDetect asks kube-apiserver with the gate on, and another without it.
func TestDetect(t *testing.T) {
	e := env.Require(t)
	c := e.Client(t)
	ns := e.Namespace(t)
	empty := e.Namespace(t)
	shardtest.Create(t, c, ns, "w", 5, shardtest.NewWidget)
	shardtest.Create(t, c, ns, "cm", 5, shardtest.NewConfigMap)

	unstructuredWidgets := &unstructured.UnstructuredList{}
	unstructuredWidgets.SetGroupVersionKind(testapi.GroupVersion.WithKind("WidgetList"))
	metadataConfigMaps := &metav1.PartialObjectMetadataList{}
	metadataConfigMaps.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))

	lists := []struct {
		name string
		list client.ObjectList
		ns   string
	}{
		{"configmaps", &corev1.ConfigMapList{}, ns},
		{"metadata-only configmaps", metadataConfigMaps, ns},
		{"widgets", &testapi.WidgetList{}, ns},
		{"unstructured widgets", unstructuredWidgets, ns},
		{"widgets of an empty namespace", &testapi.WidgetList{}, empty},
	}
	for _, l := range lists {
		t.Run("gate on: "+l.name, func(t *testing.T) {
			d, err := ranges.Detect(t.Context(), c, l.list, client.InNamespace(l.ns))
			if err != nil {
				t.Fatal(err)
			}
			if d.Support != ranges.Honoured {
				t.Errorf("Detect() = %q; want honoured", d)
			}
			t.Log(d)
		})
	}

	if testing.Short() {
		t.Skip("-short: no second control plane without the gate")
	}
	off, err := testenv.Start(shardtest.Options)
	if err != nil {
		t.Fatalf("starting a control plane without the gate: %v", err)
	}
	defer func() {
		if err := off.Stop(); err != nil {
			t.Error(err)
		}
	}()
	oc := off.Client(t)
	ons := off.Namespace(t)
	oempty := off.Namespace(t)
	shardtest.Create(t, oc, ons, "w", 5, shardtest.NewWidget)
	shardtest.Create(t, oc, ons, "cm", 5, shardtest.NewConfigMap)
	for _, l := range lists {
		namespace := ons
		if l.ns == empty {
			namespace = oempty
		}
		t.Run("gate off: "+l.name, func(t *testing.T) {
			d, err := ranges.Detect(t.Context(), oc, l.list, client.InNamespace(namespace))
			if err != nil {
				t.Fatal(err)
			}
			if d.Support != ranges.Ignored {
				t.Errorf("Detect() = %q; want ignored", d)
			}
			t.Log(d)
		})
	}
}
