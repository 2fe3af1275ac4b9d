package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reconcilekit/reconcilekit/diet"
	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

// onTheDiet returns opts on the At's cache diet, as the operator's binary
// runs by default (--cache-diet).
func onTheDiet(t testing.TB, opts cache.Options) cache.Options {
	t.Helper()
	out, err := controller.DietCacheOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startDietManager runs the At controller under a manager whose caches are
// on the diet until the test ends, and returns its cache and a client of
// the API server. The caller holds managerMu.
func startDietManager(t *testing.T) (cache.Cache, client.WithWatch) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      onTheDiet(t, cache.Options{ByObject: controller.CacheByObject()}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return mgr.GetCache(), env.Client(t)
}

// TestTheAtCachesWhatItReadsAndNothingMore: once an At is DONE, the
// manager's cache holds the At without managedFields (nothing the
// controller does with an At reads them) and its Pod as a part: the
// metadata, the phase and the exit code, and no spec.
func TestTheAtCachesWhatItReadsAndNothingMore(t *testing.T) {
	managerMu.Lock()
	defer managerMu.Unlock()
	cached, c := startDietManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "diet", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	finishPod(t, c, ns, running.Status.PodName, 3)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if done.Status.ExitCode == nil || *done.Status.ExitCode != 3 {
		t.Errorf("exit code %v, want 3 (read from the part of the Pod the cache keeps)", done.Status.ExitCode)
	}

	whole := &atv1.At{}
	if err := c.Get(t.Context(), key, whole); err != nil {
		t.Fatal(err)
	}
	var wholeManagers []string
	for _, e := range whole.ManagedFields {
		wholeManagers = append(wholeManagers, e.Manager+"/"+e.Subresource)
	}
	waitForCache(t, cached, whole)
	inCache := &atv1.At{}
	if err := cached.Get(t.Context(), key, inCache, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if len(inCache.ManagedFields) != 0 || len(whole.ManagedFields) == 0 {
		t.Errorf("the cached At keeps %d managedFields entries (the server %v): want none, nothing the controller does with an At reads them",
			len(inCache.ManagedFields), wholeManagers)
	}
	if inCache.Status.Phase != atv1.PhaseDone || inCache.Spec.Command == "" {
		t.Errorf("the cached At lost more than managedFields: %+v", inCache)
	}

	pod := &corev1.Pod{}
	if err := cached.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: done.Status.PodName}, pod, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if !diet.IsPartial(pod) || len(pod.Spec.Containers) != 0 || pod.Status.Phase != corev1.PodFailed ||
		len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Terminated == nil ||
		pod.Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 || pod.Status.ContainerStatuses[0].Name != "" {
		t.Errorf("the cached Pod is not the part the At reads (metadata, phase, exit code): %+v", pod)
	}
	if pod.Labels[controller.AtUIDLabel] != string(done.UID) || metav1.GetControllerOf(pod) == nil {
		t.Errorf("the cached Pod lost metadata: labels %v, owner references %v", pod.Labels, pod.OwnerReferences)
	}
}

// waitForCache waits until cached holds obj at its resourceVersion.
func waitForCache(t *testing.T, cached cache.Cache, obj *atv1.At) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := &atv1.At{}
		if cached.Get(t.Context(), client.ObjectKeyFromObject(obj), got) == nil && got.ResourceVersion == obj.ResourceVersion {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache never held %s at resourceVersion %s", obj.Name, obj.ResourceVersion)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAnAtWhosePodExistsComparesItWholeAndWritesNothingToIt: when the At's
// sync ensures a Pod that exists already (created by an earlier run whose
// status write was lost), the cache holds only part of it; the controller
// reads it whole from the API server, finds nothing drifted, and goes on to
// RUNNING and DONE without a write to the Pod and without a second one.
func TestAnAtWhosePodExistsComparesItWholeAndWritesNothingToIt(t *testing.T) {
	managerMu.Lock()
	defer managerMu.Unlock()
	c := env.Client(t)
	ns := env.Namespace(t)
	at := newAt(ns, "pod-exists", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	// The Pod the controller creates, created before it runs, as it would.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.PodName(at), Labels: map[string]string{controller.AtUIDLabel: string(at.UID)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "command", Image: atv1.DefaultImage, Command: []string{"/bin/sh", "-c", at.Spec.Command}}}},
	}
	if err := controllerutil.SetControllerReference(at, pod, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), pod, client.FieldOwner(controller.Name)); err != nil {
		t.Fatal(err)
	}
	created := pod.ResourceVersion

	startDietManager(t)
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	if running.Status.PodName != pod.Name {
		t.Errorf("RUNNING with pod %q, want the existing %q", running.Status.PodName, pod.Name)
	}
	live := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), live); err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != created {
		t.Errorf("the Pod was written (resourceVersion %s, created as %s): a part taken for drift?", live.ResourceVersion, created)
	}
	finishPod(t, c, ns, pod.Name, 0)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if done.Status.Outcome != atv1.OutcomeSucceeded {
		t.Errorf("outcome %q, want %q", done.Status.Outcome, atv1.OutcomeSucceeded)
	}
	if pods := podsOf(t, c, done); len(pods) != 1 {
		t.Errorf("%d Pods, want the one that existed", len(pods))
	}
}
