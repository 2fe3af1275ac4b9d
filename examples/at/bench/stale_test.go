package bench_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

// TestAStaleCachedAtDoesNotLoseItsPodsCompletion reproduces, step by step
// and deterministically, what the side-by-side run showed under a real
// manager when the kubelet completes a Pod at once: the Pod's events wake
// the controller while its cache still holds the At as PENDING (its own
// RUNNING write not yet seen). That reconcile must not end with the At
// RUNNING and nothing left to wake it: its own status writes do not trigger
// reconciles (GenerationChangedPredicate), and the Pod will not change
// again. Either it sees the Pod has finished (DONE), or it asks to be run
// again.
func TestAStaleCachedAtDoesNotLoseItsPodsCompletion(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	at := newAt(ns, "stale", clock.Now().Add(time.Minute))
	if err := c.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)}
	fresh, err := controller.New(controller.Options{Client: c, Scheme: env.Scheme, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}

	// 1. Before the schedule: PENDING. This is what the cache will hold.
	if _, err := fresh.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	pending := &atv1.At{}
	if err := c.Get(ctx, req.NamespacedName, pending); err != nil {
		t.Fatal(err)
	}
	if pending.Status.Phase != atv1.PhasePending {
		t.Fatalf("phase = %q, want PENDING", pending.Status.Phase)
	}

	// 2. At the schedule: the Pod is created and the At is RUNNING.
	clock.Step(time.Minute)
	if _, err := fresh.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	running := &atv1.At{}
	if err := c.Get(ctx, req.NamespacedName, running); err != nil {
		t.Fatal(err)
	}
	if running.Status.Phase != atv1.PhaseRunning {
		t.Fatalf("phase = %q, want RUNNING", running.Status.Phase)
	}

	// 3. The command exits at once.
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: running.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command", Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, StartedAt: now, FinishedAt: now}}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	// 4. The Pod's event is handled while the cache still has the PENDING
	// At; every other read is current.
	stale := interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if out, ok := obj.(*atv1.At); ok && key == req.NamespacedName {
				pending.DeepCopyInto(out)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	lagging, err := controller.New(controller.Options{Client: stale, APIReader: c, Scheme: env.Scheme, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := lagging.Reconcile(ctx, req)

	got := &atv1.At{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != atv1.PhaseDone && err == nil && res.IsZero() {
		t.Errorf("after a reconcile on a stale PENDING copy, the At is %s with its Pod Succeeded, and the reconcile "+
			"returned (%+v, nil): nothing will reconcile it again (no Pod event is coming, and its status writes "+
			"are filtered), so it stays %s for good", got.Status.Phase, res, got.Status.Phase)
	}
}
