package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// bound only stops a broken test from hanging; no test measures time.
const bound = 30 * time.Second

// delayedWatch returns a watch of a fake watcher through d, as an informer
// would open it (sendInitialEvents says whether it streams its initial
// state first).
func delayedWatch(t *testing.T, d *rt.CacheDelay, sendInitialEvents bool) (*watch.FakeWatcher, watch.Interface) {
	t.Helper()
	fw := watch.NewFake()
	lw := d.ListerWatcher(&toolscache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.ConfigMapList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	})
	w, err := lw.Watch(metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(sendInitialEvents)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return fw, w
}

func cmEvent(typ watch.EventType, name, value string) watch.Event {
	return watch.Event{Type: typ, Object: &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data:       map[string]string{"v": value},
	}}
}

func initialEventsEnd() watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}}
}

// describe renders an event for comparison.
func describe(ev watch.Event) string {
	if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type != watch.Bookmark {
		return fmt.Sprintf("%s %s=%s", ev.Type, cm.Name, cm.Data["v"])
	}
	return string(ev.Type)
}

// receive takes n events from w, failing the test if they do not come.
func receive(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(bound)
	for range n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("result channel closed after %v, want %d events", got, n)
			}
			got = append(got, describe(ev))
		case <-timeout:
			t.Fatalf("received %v, want %d events", got, n)
		}
	}
	return got
}

// nothingYet fails the test if w has an event ready.
func nothingYet(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("event %s delivered before its delay passed", describe(ev))
	default:
	}
}

// waitPending waits until d holds n events.
func waitPending(t *testing.T, d *rt.CacheDelay, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, bound, true, func(context.Context) (bool, error) {
		return d.Pending() == n, nil
	})
	if err != nil {
		t.Fatalf("pending events = %d, want %d: %v", d.Pending(), n, err)
	}
}

// TestCacheDelayHoldsEventsUntilTheClockPasses: with a fake clock, every
// event is held until the clock moves Delay past its arrival, then all are
// delivered in the order they came.
func TestCacheDelayHoldsEventsUntilTheClockPasses(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
	fw, w := delayedWatch(t, d, false)

	fw.Add(cmEvent(watch.Added, "a", "1").Object)
	fw.Modify(cmEvent(watch.Modified, "a", "2").Object)
	waitPending(t, d, 2)
	clk.Step(30 * time.Second)
	fw.Delete(cmEvent(watch.Deleted, "a", "2").Object)
	waitPending(t, d, 3)
	nothingYet(t, w)

	// The first two are due; the third, which came 30s later, is not.
	clk.Step(30 * time.Second)
	if diff := cmp.Diff([]string{"ADDED a=1", "MODIFIED a=2"}, receive(t, w, 2)); diff != "" {
		t.Errorf("delivered after one Delay (-want +got):\n%s", diff)
	}
	waitPending(t, d, 1)
	nothingYet(t, w)
	clk.Step(30 * time.Second)
	if diff := cmp.Diff([]string{"DELETED a=2"}, receive(t, w, 1)); diff != "" {
		t.Errorf("delivered last (-want +got):\n%s", diff)
	}
	waitPending(t, d, 0)
}

// TestCacheDelayPassesTheInitialStateAtOnce: a watch that streams its
// initial state delivers it, up to and including the initial-events-end
// bookmark, without delay, so a cache syncs at once; changes after it are
// held.
func TestCacheDelayPassesTheInitialStateAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
	fw, w := delayedWatch(t, d, true)

	go func() {
		fw.Add(cmEvent(watch.Added, "a", "1").Object)
		fw.Add(cmEvent(watch.Added, "b", "1").Object)
		fw.Action(watch.Bookmark, initialEventsEnd().Object)
		fw.Modify(cmEvent(watch.Modified, "a", "2").Object)
	}()
	if diff := cmp.Diff([]string{"ADDED a=1", "ADDED b=1", "BOOKMARK"}, receive(t, w, 3)); diff != "" {
		t.Errorf("initial state (-want +got):\n%s", diff)
	}
	waitPending(t, d, 1)
	nothingYet(t, w)
	clk.Step(time.Minute)
	if diff := cmp.Diff([]string{"MODIFIED a=2"}, receive(t, w, 1)); diff != "" {
		t.Errorf("after the delay (-want +got):\n%s", diff)
	}
}

// TestCacheDelayWithoutInitialStateDelaysEverything: a watch that does not
// stream its initial state (it follows a list) delays even a bookmark.
func TestCacheDelayWithoutInitialStateDelaysEverything(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
	fw, w := delayedWatch(t, d, false)

	fw.Action(watch.Bookmark, initialEventsEnd().Object)
	fw.Add(cmEvent(watch.Added, "a", "1").Object)
	waitPending(t, d, 2)
	nothingYet(t, w)
	clk.Step(time.Minute)
	if diff := cmp.Diff([]string{"BOOKMARK", "ADDED a=1"}, receive(t, w, 2)); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// TestCacheDelayRealClock: the real clock releases held events by itself,
// in order, and the zero value delivers at once.
func TestCacheDelayRealClock(t *testing.T) {
	for _, d := range []*rt.CacheDelay{{Delay: 20 * time.Millisecond}, {}} {
		t.Run(fmt.Sprint(d.Delay), func(t *testing.T) {
			fw, w := delayedWatch(t, d, false)
			go func() {
				for i := range 5 {
					fw.Modify(cmEvent(watch.Modified, "a", fmt.Sprint(i)).Object)
				}
			}()
			want := []string{"MODIFIED a=0", "MODIFIED a=1", "MODIFIED a=2", "MODIFIED a=3", "MODIFIED a=4"}
			if diff := cmp.Diff(want, receive(t, w, 5)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			waitPending(t, d, 0)
		})
	}
}

// TestCacheDelayStopAndEnd: stopping a watch stops the one it wraps,
// forgets what it held and closes its channel; a watch the server ended
// still delivers what it held, then closes.
func TestCacheDelayStopAndEnd(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t.Run("stop", func(t *testing.T) {
		d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
		fw, w := delayedWatch(t, d, false)
		fw.Add(cmEvent(watch.Added, "a", "1").Object)
		waitPending(t, d, 1)
		w.Stop()
		if _, ok := <-w.ResultChan(); ok {
			t.Error("an event came after Stop")
		}
		if !fw.IsStopped() {
			t.Error("the wrapped watch was not stopped")
		}
		waitPending(t, d, 0)
	})
	t.Run("server ends the watch", func(t *testing.T) {
		d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
		fw, w := delayedWatch(t, d, false)
		fw.Add(cmEvent(watch.Added, "a", "1").Object)
		fw.Stop()
		waitPending(t, d, 1)
		clk.Step(time.Minute)
		if diff := cmp.Diff([]string{"ADDED a=1"}, receive(t, w, 1)); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}
		if _, ok := <-w.ResultChan(); ok {
			t.Error("the channel stayed open after the watch ended")
		}
	})
}

// TestCacheDelayHolds: Holds finds a held event by the object's namespace,
// name and resourceVersion, and only while the event is held.
func TestCacheDelayHolds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := &rt.CacheDelay{Delay: time.Minute, Clock: clk}
	fw, w := delayedWatch(t, d, false)
	cm := func(ns, name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	}
	fw.Modify(cm("ns", "a", "7"))
	waitPending(t, d, 1)
	tests := []struct {
		obj  *corev1.ConfigMap
		want bool
	}{
		{cm("ns", "a", "7"), true},
		{cm("ns", "a", "8"), false},
		{cm("ns", "b", "7"), false},
		{cm("other", "a", "7"), false},
	}
	for _, tt := range tests {
		if got := d.Holds(tt.obj); got != tt.want {
			t.Errorf("Holds(%s/%s@%s) = %v, want %v", tt.obj.Namespace, tt.obj.Name, tt.obj.ResourceVersion, got, tt.want)
		}
	}
	clk.Step(time.Minute)
	receive(t, w, 1)
	if d.Holds(cm("ns", "a", "7")) {
		t.Error("Holds is still true after the event was delivered")
	}
}

// TestCacheDelayValidate: a negative Delay is refused, by Validate and by
// every list and watch through the delay, which then sends nothing to the
// ListerWatcher it wraps.
func TestCacheDelayValidate(t *testing.T) {
	for _, tt := range []struct {
		name  string
		delay *rt.CacheDelay
		valid bool
	}{
		{"zero", &rt.CacheDelay{}, true},
		{"a delay on a fake clock", &rt.CacheDelay{Delay: time.Second, Clock: testingclock.NewFakeClock(time.Now())}, true},
		{"nil", nil, false},
		{"negative", &rt.CacheDelay{Delay: -time.Second}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.delay.Validate(); (err == nil) != tt.valid || (err != nil && !errors.Is(err, rt.ErrInvalidCacheDelay)) {
				t.Errorf("Validate = %v, want valid=%v (or ErrInvalidCacheDelay)", err, tt.valid)
			}
		})
	}

	invalid := &rt.CacheDelay{Delay: -time.Second}
	if _, err := invalid.CacheOptions(cache.Options{}); !errors.Is(err, rt.ErrInvalidCacheDelay) {
		t.Errorf("CacheOptions = %v, want ErrInvalidCacheDelay", err)
	}
	var calls int
	lw := invalid.ListerWatcher(&toolscache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { calls++; return &corev1.ConfigMapList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { calls++; return watch.NewFake(), nil },
	})
	if _, err := lw.List(metav1.ListOptions{}); !errors.Is(err, rt.ErrInvalidCacheDelay) {
		t.Errorf("List = %v, want ErrInvalidCacheDelay", err)
	}
	if _, err := lw.Watch(metav1.ListOptions{Watch: true}); !errors.Is(err, rt.ErrInvalidCacheDelay) {
		t.Errorf("Watch = %v, want ErrInvalidCacheDelay", err)
	}
	if calls != 0 {
		t.Errorf("%d calls reached the wrapped ListerWatcher, want 0", calls)
	}
}
