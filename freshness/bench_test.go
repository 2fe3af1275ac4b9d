package freshness_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
