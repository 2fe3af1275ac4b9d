package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
)

// kubelet plays the kubelet for the Pods of one namespace (envtest has
// none): it completes a Pod as a kubelet does when its command exits 0
// (phase Succeeded, a terminated container status), as examples/at/bench
// does. While paused it completes nothing, so that Ats can be held RUNNING.
// It records every Pod it ever sees by UID, so that a second Pod for an At
// is caught even if it were deleted again.
type kubelet struct {
	c  client.WithWatch
	ns string

	mu      sync.Mutex
	paused  bool
	seen    map[types.UID]types.UID // Pod UID -> UID of the At controlling it
	waiting map[types.UID]*corev1.Pod
	work    chan *corev1.Pod
}

// startKubelet runs a kubelet for namespace ns until the test ends.
func startKubelet(t *testing.T, ns string) *kubelet {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{c: c, ns: ns, seen: map[types.UID]types.UID{}, waiting: map[types.UID]*corev1.Pod{},
		work: make(chan *corev1.Pod, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { k.watch(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case pod := <-k.work:
				podtest.Complete(ctx, k.c, pod)
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return k
}

// pause stops completing Pods; resume completes those that came meanwhile
// and every later one.
func (k *kubelet) pause() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.paused = true
}

func (k *kubelet) resume() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.paused = false
	for uid, pod := range k.waiting {
		delete(k.waiting, uid)
		k.work <- pod
	}
}

// podsByAt returns how many distinct Pods the kubelet has seen per At UID.
func (k *kubelet) podsByAt() map[types.UID]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[types.UID]int{}
	for _, at := range k.seen {
		out[at]++
	}
	return out
}

// watch lists and watches the namespace's Pods until ctx ends, resuming
// from the last resourceVersion seen when a watch ends.
func (k *kubelet) watch(ctx context.Context) {
	var rv string
	for ctx.Err() == nil {
		if rv == "" {
			var pods corev1.PodList
			if err := k.c.List(ctx, &pods, client.InNamespace(k.ns)); err != nil {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			for i := range pods.Items {
				k.observe(&pods.Items[i])
			}
			rv = pods.ResourceVersion
		}
		w, err := k.c.Watch(ctx, &corev1.PodList{}, client.InNamespace(k.ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
				pod := ev.Object.(*corev1.Pod)
				rv = pod.ResourceVersion
				if ev.Type != watch.Bookmark {
					k.observe(pod)
				}
			case watch.Error:
				rv = "" // too old: list again
			}
		}
		w.Stop()
	}
}

func (k *kubelet) observe(pod *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var at types.UID
	if ref := metav1.GetControllerOf(pod); ref != nil {
		at = ref.UID
	}
	k.seen[pod.UID] = at
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		delete(k.waiting, pod.UID)
		return
	}
	if k.paused {
		k.waiting[pod.UID] = pod
		return
	}
	k.work <- pod
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
