package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestAtsUnderALaggingCacheMakeOnePodEachWithNoRefusedWrite runs the At
// controller under a real manager whose cache lags 700ms behind the API
// server (every watch event delayed on purpose), so that every reconcile
// after a write reads through a cache that has not seen it yet. The
// controller has no uncached read to fall back on: the freshness guard must
// keep it from acting on a stale At or a missing Pod. Every At ends DONE
// with exactly one Pod, no write is refused with a conflict, and no event is
// recorded twice.
func TestAtsUnderALaggingCacheMakeOnePodEachWithNoRefusedWrite(t *testing.T) {
	managerMu.Lock()
	defer managerMu.Unlock()
	ns := env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: &reconciletest.CacheDelay{Delay: 700 * time.Millisecond},
		Options: manager.Options{Cache: onTheDiet(t, cache.Options{ByObject: controller.CacheByObject()})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)

	c := env.Client(t)
	const ats = 10
	schedule := rfc3339(time.Now().Add(2 * time.Second))
	for i := range ats {
		if err := c.Create(t.Context(), newAt(ns, fmt.Sprint("lag-", i), schedule)); err != nil {
			t.Fatal(err)
		}
	}
	// The kubelet: every Pod runs its command at once.
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
				for _, p := range pods.Items {
					if p.Status.Phase != "" && p.Status.Phase != corev1.PodPending {
						continue
					}
					now := metav1.Now()
					p.Status.Phase = corev1.PodSucceeded
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command", Image: p.Spec.Containers[0].Image,
						State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, StartedAt: now, FinishedAt: now}}}}
					_ = c.Status().Update(ctx, &p) // a conflict is retried on the next pass
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for i := range ats {
		at := waitFor(t, c, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("lag-", i)}, "DONE", func(a *atv1.At) bool {
			return a.Status.Phase == atv1.PhaseDone
		})
		if pods := podsOf(t, c, at); len(pods) != 1 {
			t.Errorf("%s has %d Pods, want exactly 1", at.Name, len(pods))
		}
		if at.Status.Outcome != atv1.OutcomeSucceeded {
			t.Errorf("%s outcome %q, want Succeeded", at.Name, at.Status.Outcome)
		}
	}
	stop()
	for _, r := range mgr.Requests.Requests() {
		if r.Code == 409 {
			t.Errorf("a write was refused: %s", r)
		}
	}
	// The event recorder writes in the background: wait for one Ready
	// event per At, then check none came twice.
	seen := map[string]int{}
	err = env.WaitFor(t.Context(), &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lag-0"}}, "one event per At", func() bool {
		seen = map[string]int{}
		for i := range ats {
			at := &atv1.At{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: fmt.Sprint("lag-", i)}, at); err != nil {
				return false
			}
			for _, e := range events(t, c, at) {
				seen[at.Name+"/"+e.Reason]++
			}
		}
		return len(seen) >= ats
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("event %s recorded %d times, want once", k, n)
		}
	}
}

// TestThePodCacheHoldsOnlyTheAtsPods proves the controller's cache, set up
// with CacheByObject, never holds a Pod that no At created: a cluster full
// of other Pods costs the controller nothing.
func TestThePodCacheHoldsOnlyTheAtsPods(t *testing.T) {
	managerMu.Lock()
	defer managerMu.Unlock()
	ns := env.Namespace(t)
	c := env.Client(t)
	for i := range 5 {
		unrelated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("unrelated-", i), Labels: map[string]string{"app": "other"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := c.Create(t.Context(), unrelated); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{Cache: onTheDiet(t, cache.Options{ByObject: controller.CacheByObject()})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	if err := c.Create(t.Context(), newAt(ns, "mine", rfc3339(time.Now()))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, client.ObjectKey{Namespace: ns, Name: "mine"}, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	var cached corev1.PodList
	if err := mgr.GetCache().List(t.Context(), &cached, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(cached.Items) != 1 || cached.Items[0].Labels[controller.AtUIDLabel] == "" {
		var names []string
		for _, p := range cached.Items {
			names = append(names, p.Name)
		}
		t.Errorf("the cache holds Pods %v, want only the At's one", names)
	}
}
