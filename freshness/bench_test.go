package freshness_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/freshness"
)

// BenchmarkGet measures what the guard adds to a read served from memory
// (the fake client: a deep copy from an in-memory store, as an informer
// cache serves it), plain and guarded with nothing tracked for the object;
// and to a write followed by a read of the same object, the reconciler's
// usual pattern, where the guard records the write and the read checks and
// drops it.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "default", Name: "cm"}
	plain := fake.NewClientBuilder().WithObjects(configMap("cm", "x")).Build()
	guarded := (&freshness.Tracker{}).Wrap(plain)
	for _, c := range []struct {
		name string
		c    client.Client
	}{{"plain", plain}, {"guarded", guarded}} {
		b.Run("get/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.c.Get(ctx, key, &corev1.ConfigMap{})
			}
		})
	}
	for _, c := range []struct {
		name string
		c    client.Client
	}{{"plain", plain}, {"guarded", guarded}} {
		b.Run("update-then-get/"+c.name, func(b *testing.B) {
			cm := &corev1.ConfigMap{}
			_ = plain.Get(ctx, key, cm)
			b.ReportAllocs()
			for b.Loop() {
				_ = c.c.Update(ctx, cm)
				_ = c.c.Get(ctx, key, &corev1.ConfigMap{})
			}
		})
	}
}

// BenchmarkTrackerMemory measures the heap one remembered write costs,
// reported as B/entry: the basis of the documented memory bound. The writes
// go to a client that accepts them without storing anything, so only the
// tracker's memory is counted.
func BenchmarkTrackerMemory(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	rv := 0
	accepting := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Update: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
			rv++
			obj.SetResourceVersion(fmt.Sprint(rv))
			return nil
		},
	})
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = configMap(fmt.Sprint("cm-", i), "x")
	}
	for b.Loop() {
		b.StopTimer()
		tracker := &freshness.Tracker{}
		c := tracker.Wrap(accepting)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for _, o := range objs {
			_ = c.Update(ctx, o)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if tracker.Len() != n {
			b.Fatalf("tracked %d, want %d", tracker.Len(), n)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entry")
		runtime.KeepAlive(tracker)
		b.StartTimer()
	}
}

// BenchmarkCachedGet is BenchmarkGet on a real informer cache (envtest): a
// client whose reads come from the manager-style cache, plain and guarded;
// the guarded read of an object it did not write is one map lookup more.
func BenchmarkCachedGet(b *testing.B) {
	env.Require(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(b)
	api := env.Client(b)
	if err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"v": "x"}}); err != nil {
		b.Fatal(err)
	}
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	cached, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "cm"}
	if err := cached.Get(ctx, key, &corev1.ConfigMap{}); err != nil { // starts and syncs the informer
		b.Fatal(err)
	}
	for _, c := range cachedClients(b, informers, cached) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.c.Get(ctx, key, &corev1.ConfigMap{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cachedClients are the clients the cached benchmarks compare, all reading
// from one cache: plain, guarded by a Tracker, and controller-runtime's own
// read-your-writes client (CacheOptions.EnableReadYourWritesConsistency).
func cachedClients(b *testing.B, informers cache.Cache, cached client.Client) []struct {
	name string
	c    client.Client
} {
	b.Helper()
	consistent, err := client.New(env.Config, client.Options{Scheme: env.Scheme,
		Cache: &client.CacheOptions{Reader: informers, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		b.Fatal(err)
	}
	return []struct {
		name string
		c    client.Client
	}{
		{"plain", cached},
		{"guarded", (&freshness.Tracker{Informers: informers}).Wrap(cached)},
		{"controller-runtime", consistent},
	}
}

// BenchmarkWriteThenGet is a reconcile's pattern: write an object, then
// read it back from the cache. Plain, the read often returns the object
// as it was before the write; guarded, and with controller-runtime's
// client, it waits for the cache to catch up with the write, so a loop of
// them costs the watch latency: what reading your own writes costs.
func BenchmarkWriteThenGet(b *testing.B) {
	env.Require(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(b)
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	cached, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cachedClients(b, informers, cached) {
		b.Run(c.name, func(b *testing.B) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wtg-" + c.name}, Data: map[string]string{"n": "0"}}
			if err := c.c.Create(ctx, cm); err != nil {
				b.Fatal(err)
			}
			key := client.ObjectKeyFromObject(cm)
			stale, n := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				n++
				cm.Data["n"] = strconv.Itoa(n)
				if err := c.c.Update(ctx, cm); err != nil {
					b.Fatal(err)
				}
				got := &corev1.ConfigMap{}
				if err := c.c.Get(ctx, key, got); err != nil {
					b.Fatal(err)
				}
				if got.Data["n"] != cm.Data["n"] {
					stale++
				}
			}
			b.ReportMetric(float64(stale)/float64(n), "stale-reads/op")
		})
	}
}
