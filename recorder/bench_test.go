package recorder

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

// benchEvents is how many distinct events BenchmarkRetainedBytesPerEvent
// records through each recorder.
var benchEvents = flag.Int("recorder.events", 10000, "distinct events BenchmarkRetainedBytesPerEvent records through each recorder")

// benchPods returns n Pods of an operator's scale: ten namespaces, names,
// UIDs and resourceVersions of the lengths the API server gives.
func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("team-%d", i%10),
			Name:            fmt.Sprintf("nightly-report-%05d", i),
			UID:             types.UID(fmt.Sprintf("5f0c3a1e-6d2b-4c8e-9a7f-%012d", i)),
			ResourceVersion: fmt.Sprint(1000000 + i),
		}}
	}
	return pods
}

// heapAfterGC is the live heap once collected.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// record records one event on each Pod through r, waiting every 500
// events for sent to catch up so that no queue overflows, then for all to
// be sent.
func record(tb testing.TB, r events.EventRecorder, pods []*corev1.Pod, sent func() int) {
	when := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for i, p := range pods {
		r.Eventf(p, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "runs at %s", when)
		if (i+1)%500 == 0 || i == len(pods)-1 {
			waitFor(tb, func() bool { return sent() >= i+1 })
		}
	}
}

// retainedClientGo is the heap client-go's broadcaster keeps per event of
// pods, once sent: its cache of events for the series.
func retainedClientGo(tb testing.TB, pods []*corev1.Pod) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &memorySink{}
	b := events.NewBroadcaster(sink)
	defer b.Shutdown()
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		tb.Fatal(err)
	}
	r := b.NewRecorder(newScheme(tb), "at-controller")
	goroutines := runtime.NumGoroutine()
	before := heapAfterGC()
	record(tb, r, pods, sink.len)
	// The goroutine of each event ends after its write.
	waitFor(tb, func() bool { return runtime.NumGoroutine() <= goroutines })
	after := heapAfterGC()
	runtime.KeepAlive(r)
	return float64(int64(after)-int64(before)) / float64(len(pods))
}

// retainedRecorder is the heap a Recorder keeps per event of pods, once
// sent.
func retainedRecorder(tb testing.TB, pods []*corev1.Pod) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	c, w := nullClient(tb)
	r := New(c, "at-controller")
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}()
	before := heapAfterGC()
	record(tb, r, pods, func() int { return int(w.creates.Load()) })
	after := heapAfterGC()
	r.mu.Lock()
	n := len(r.singles)
	r.mu.Unlock()
	if n != len(pods) {
		tb.Fatalf("the Recorder keeps %d events, want %d", n, len(pods))
	}
	runtime.KeepAlive(r)
	return float64(int64(after)-int64(before)) / float64(len(pods))
}

// BenchmarkRetainedBytesPerEvent records -recorder.events distinct events
// (10,000 by default, one per Pod) through client-go's broadcaster and
// through a Recorder, and reports the live heap each keeps per event once
// they are sent: what stays for the 6 to 12 minutes of the series window.
// The Pods stay alive throughout, as in an informer's cache, so only what
// the recorders keep counts.
func BenchmarkRetainedBytesPerEvent(b *testing.B) {
	pods := benchPods(*benchEvents)
	var clientGo, recorder float64
	for b.Loop() {
		clientGo = retainedClientGo(b, pods)
		recorder = retainedRecorder(b, pods)
	}
	b.ReportMetric(clientGo, "clientgo-B/event")
	b.ReportMetric(recorder, "recorder-B/event")
	b.ReportMetric(clientGo/recorder, "clientgo/recorder")
	runtime.KeepAlive(pods)
}
