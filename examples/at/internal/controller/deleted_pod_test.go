package controller_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

// TestAnAtWhosePodAnotherClientDeletesEndsDoneFailedAtOnce: someone else
// (kubectl delete pod, an eviction, a node drain) deletes the Pod of a
// RUNNING At. The controller created that Pod, so its freshness guard
// remembers the write; but the informer has seen the deletion, so the read
// is not stale: the first reconcile after the deletion reads the Pod as
// gone and ends the At DONE, Failed, with no read given up as stale (each
// one a quiet requeue; before, they went on until the guard forgot the Pod,
// two minutes later).
func TestAnAtWhosePodAnotherClientDeletesEndsDoneFailedAtOnce(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "pod-deleted", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })

	gaveUp := metricstest.Value(t, "reconcilekit_stale_reads_total", map[string]string{"outcome": "gave_up"})
	before := reconciles(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: running.Status.PodName}}
	start := time.Now()
	if err := c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	t.Logf("DONE %s after the Pod's deletion, in %v reconciles", time.Since(start).Round(time.Millisecond), reconciles(t)-before)
	if done.Status.Outcome != atv1.OutcomeFailed {
		t.Errorf("outcome %q, want %q", done.Status.Outcome, atv1.OutcomeFailed)
	}
	if n := metricstest.Value(t, "reconcilekit_stale_reads_total", map[string]string{"outcome": "gave_up"}) - gaveUp; n != 0 {
		t.Errorf("%v reads of the deleted Pod were given up as stale, want none: a deletion by another writer is news, not a lagging cache", n)
	}
	if pods := podsOf(t, c, done); len(pods) != 0 {
		t.Errorf("%d Pods after the deletion, want none: an At never starts a second Pod", len(pods))
	}
}
