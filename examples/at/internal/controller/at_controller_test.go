package controller_test

import (
	"context"
	"github.com/google/go-cmp/cmp"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../../config/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{atv1.AddToScheme},
		Shared:            true,
	})
}

// managerMu serialises the managers of this package's tests: each test runs
// its own manager, and the reconcile counter is process-wide.
var managerMu sync.Mutex

// startManager runs the At controller under a real manager until the test
// ends (or stop is called) and returns a client that reads from the API
// server.
func startManager(t *testing.T) (c client.Client, stop func()) {
	t.Helper()
	c = env.Client(t)
	managerMu.Lock()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      onTheDiet(t, cache.Options{ByObject: controller.CacheByObject()}),
	})
	if err != nil {
		managerMu.Unlock()
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		managerMu.Unlock()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
			managerMu.Unlock()
		})
	}
	t.Cleanup(stop)
	return c, stop
}

func newAt(ns, name, schedule string) *atv1.At {
	return &atv1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       atv1.AtSpec{Schedule: schedule, Command: "echo hello"},
	}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// waitFor polls the At until cond holds, failing the test after 30 s.
func waitFor(t *testing.T, c client.Client, key client.ObjectKey, what string, cond func(*atv1.At) bool) *atv1.At {
	t.Helper()
	at := &atv1.At{}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, at); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(at), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: phase=%q conditions=%+v", what, err, at.Status.Phase, at.Status.Conditions)
	}
	return at
}

func podsOf(t *testing.T, c client.Client, at *atv1.At) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(at.Namespace)); err != nil {
		t.Fatal(err)
	}
	var owned []corev1.Pod
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == at.UID {
			owned = append(owned, p)
		}
	}
	return owned
}

// finishPod does what a kubelet does when the command exits.
func finishPod(t *testing.T, c client.Client, ns, name string, exit int32) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	podtest.Finish(pod, exit)
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatalf("set pod %s to %s: %v", name, pod.Status.Phase, err)
	}
}

// reconciles returns how many times the "at" controller has reconciled,
// from controller-runtime's own metric.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == "at" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// settledReconciles waits until the "at" controller's reconcile count has
// not changed for quiet (at most 30 s) and returns it.
func settledReconciles(t *testing.T, quiet time.Duration) float64 {
	t.Helper()
	last, since := reconciles(t), time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, false, func(context.Context) (bool, error) {
		if n := reconciles(t); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
	if err != nil {
		t.Fatalf("the at controller kept reconciling (%v so far): %v", last, err)
	}
	return last
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func events(t *testing.T, c client.Client, at *atv1.At) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(at.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == at.UID {
			out = append(out, e)
		}
	}
	return out
}

func TestAtRunsItsCommandOnceAtTheScheduleAndEndsDoneReady(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	schedule := time.Now().Add(5 * time.Second).Truncate(time.Second)
	at := newAt(ns, "lifecycle", rfc3339(schedule))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)

	// Due 5 s after its creation, within controller.FirstStatusWithin: the
	// controller adds its finalizer and waits, writing no PENDING status
	// that RUNNING would overwrite moments later.
	pending := waitFor(t, c, key, "the finalizer", controllerHasFinalizer)
	if pending.Status.Phase != "" && pending.Status.Phase != atv1.PhaseRunning {
		t.Errorf("phase before the schedule = %q, want no status written yet", pending.Status.Phase)
	}

	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	pods := podsOf(t, c, running)
	if len(pods) != 1 {
		t.Fatalf("pods owned by the At = %d, want 1", len(pods))
	}
	pod := pods[0]
	if pod.Name != running.Status.PodName || pod.Name != controller.PodName(running) {
		t.Errorf("pod name = %q, status.podName = %q, want the deterministic %q", pod.Name, running.Status.PodName, controller.PodName(running))
	}
	if pod.CreationTimestamp.Time.Before(schedule) {
		t.Errorf("pod created at %s, before the schedule %s", pod.CreationTimestamp, schedule)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never", pod.Spec.RestartPolicy)
	}
	if got := strings.Join(pod.Spec.Containers[0].Command, " "); got != "/bin/sh -c echo hello" {
		t.Errorf("command = %q", got)
	}
	if pod.Spec.Containers[0].Image != atv1.DefaultImage {
		t.Errorf("image = %q, want the default %q", pod.Spec.Containers[0].Image, atv1.DefaultImage)
	}

	finishPod(t, c, ns, pod.Name, 0)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if done.Status.Outcome != atv1.OutcomeSucceeded || done.Status.ExitCode == nil || *done.Status.ExitCode != 0 {
		t.Errorf("outcome = %q exitCode = %v, want Succeeded 0", done.Status.Outcome, done.Status.ExitCode)
	}
	ready, _ := status.FindCondition(done, status.TypeReady)
	if ready.Status != metav1.ConditionTrue || ready.Reason != controller.ReasonCommandSucceeded {
		t.Errorf("Ready = %+v, want True/%s", ready, controller.ReasonCommandSucceeded)
	}
	if status.IsTrue(done, status.TypeReconciling) || status.IsTrue(done, status.TypeStalled) {
		t.Errorf("DONE At still Reconciling or Stalled: %+v", done.Status.Conditions)
	}

	// kstatus (kubectl wait, Flux, Argo CD) reads a DONE At as Current.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(done)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != kstatus.CurrentStatus {
		t.Errorf("kstatus = %s (%s), want Current", res.Status, res.Message)
	}

	// kubectl, a real client, waits for Ready and gets it.
	kubectl := env.Kubectl(t)
	kubeconfig := env.Kubeconfig(t)
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig, "-n", ns,
		"wait", "--for=condition=Ready", "at/"+done.Name, "--timeout=30s").CombinedOutput()
	if err != nil {
		t.Errorf("kubectl wait --for=condition=Ready: %v: %s", err, out)
	}

	// The Loop's default event policy: a successful lifecycle costs one
	// event, when the At becomes Ready; PENDING and RUNNING are on the
	// conditions only.
	seen := map[string]int{}
	for _, e := range events(t, c, done) {
		seen[e.Reason]++
	}
	if diff := cmp.Diff(map[string]int{controller.ReasonCommandSucceeded: 1}, seen); diff != "" {
		t.Errorf("events by reason (-want +got):\n%s", diff)
	}
}

func controllerHasFinalizer(a *atv1.At) bool {
	for _, f := range a.Finalizers {
		if f == controller.PodCleanupFinalizer {
			return true
		}
	}
	return false
}

func TestAnAtWithAMaximalNameRunsItsPod(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, strings.Repeat("a", 253), rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	running := waitFor(t, c, client.ObjectKeyFromObject(at), "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	if pods := podsOf(t, c, running); len(pods) != 1 || pods[0].Labels[controller.AtUIDLabel] != string(running.UID) {
		t.Errorf("pods = %d (labels %v), want 1 labelled with the At's UID", len(pods), pods)
	}
}

func TestAtWithAFailingCommandEndsDoneFailedAndStalled(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "fails", rfc3339(time.Now().Add(-time.Minute)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	finishPod(t, c, ns, running.Status.PodName, 3)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if done.Status.Outcome != atv1.OutcomeFailed || done.Status.ExitCode == nil || *done.Status.ExitCode != 3 {
		t.Errorf("outcome = %q exitCode = %v, want Failed 3", done.Status.Outcome, done.Status.ExitCode)
	}
	stalled, _ := status.FindCondition(done, status.TypeStalled)
	if stalled.Status != metav1.ConditionTrue || stalled.Reason != controller.ReasonCommandFailed || !strings.Contains(stalled.Message, "exit code 3") {
		t.Errorf("Stalled = %+v, want True/%s naming exit code 3", stalled, controller.ReasonCommandFailed)
	}
	if status.IsTrue(done, status.TypeReady) {
		t.Errorf("failed At is Ready")
	}
	// kubectl wait does not mistake a failed At for a Ready one.
	out, err := exec.CommandContext(t.Context(), env.Kubectl(t), "--kubeconfig", env.Kubeconfig(t), "-n", ns,
		"wait", "--for=condition=Ready", "at/"+done.Name, "--timeout=1s").CombinedOutput()
	if err == nil {
		t.Errorf("kubectl wait --for=condition=Ready succeeded on a failed At: %s", out)
	}
}

func TestEditingTheScheduleOfAPendingAtReschedulesIt(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "resched", rfc3339(time.Now().Add(time.Hour)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	// Due in an hour: PENDING is worth showing.
	pending := waitFor(t, c, key, "PENDING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhasePending })
	if !status.IsTrue(pending, status.TypeReconciling) || status.IsTrue(pending, status.TypeReady) {
		t.Errorf("PENDING At conditions = %+v, want Reconciling=True and not Ready", pending.Status.Conditions)
	}
	if pending.Status.ObservedGeneration != pending.Generation || !controllerHasFinalizer(pending) {
		t.Errorf("observedGeneration = %d (want %d), finalizers = %v", pending.Status.ObservedGeneration, pending.Generation, pending.Finalizers)
	}
	if n := len(podsOf(t, c, pending)); n != 0 {
		t.Fatalf("an At scheduled in an hour has %d pods", n)
	}
	pending.Spec.Schedule = rfc3339(time.Now().Add(time.Second))
	if err := c.Update(t.Context(), pending); err != nil {
		t.Fatal(err)
	}
	running := waitFor(t, c, key, "RUNNING after the reschedule", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	if running.Status.ObservedGeneration != 2 {
		t.Errorf("observedGeneration = %d, want 2 (the edited spec)", running.Status.ObservedGeneration)
	}
}

func TestRestartingTheControllerMidRunCreatesNoSecondPod(t *testing.T) {
	c, stop := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "restart", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	stop()

	// A new controller process: empty cache, no memory of the first one.
	c, _ = startManager(t)
	// Let it observe the At and its Pod before the Pod finishes.
	deadline := time.Now().Add(5 * time.Second)
	for reconcilesAtLeast := reconciles(t) + 1; reconciles(t) < reconcilesAtLeast && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	finishPod(t, c, ns, running.Status.PodName, 0)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if pods := podsOf(t, c, done); len(pods) != 1 {
		t.Errorf("pods after a restart = %d, want exactly 1", len(pods))
	}
}

func TestDeletingARunningAtDeletesItsPodThroughTheFinalizer(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "delete-me", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	if err := c.Delete(t.Context(), running); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, key, &atv1.At{})), nil
	})
	if err != nil {
		t.Fatalf("the At was not deleted: %v", err)
	}
	pod := &corev1.Pod{}
	err = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: running.Status.PodName}, pod)
	// envtest has no kubelet: a deleted Pod with a grace period lingers with
	// a deletionTimestamp until a kubelet confirms it. Either way it is
	// being deleted.
	if err == nil && pod.DeletionTimestamp == nil {
		t.Errorf("pod %s survived its At's deletion", pod.Name)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	found := false
	for _, e := range events(t, c, running) {
		if e.Reason == controller.ReasonPodDeleted {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s event", controller.ReasonPodDeleted)
	}
}

// TestDeletingARunningAtWithOrphanPropagationStillStopsItsCommand is the
// guarantee the At's finalizer adds to the Pod's owner reference, and the
// reason it keeps its two writes per At (docs/cost.md): deleted with
// --cascade=orphan, an At's Pod would be orphaned by the garbage collector
// and its command would run on; the finalizer deletes it anyway. (envtest
// runs no garbage collector, so the At itself stays, held by the "orphan"
// finalizer only the garbage collector removes.)
func TestDeletingARunningAtWithOrphanPropagationStillStopsItsCommand(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "orphan-me", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	if err := c.Delete(t.Context(), running, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	podKey := client.ObjectKey{Namespace: ns, Name: running.Status.PodName}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		err := c.Get(ctx, podKey, pod)
		return apierrors.IsNotFound(err) || (err == nil && pod.DeletionTimestamp != nil), nil
	})
	if err != nil {
		t.Fatalf("pod %s still runs after its At was deleted with orphan propagation", podKey.Name)
	}
	left := &atv1.At{}
	if err := c.Get(t.Context(), key, left); err == nil && slices.Contains(left.Finalizers, controller.PodCleanupFinalizer) {
		waitFor(t, c, key, "the pod-cleanup finalizer removed", func(a *atv1.At) bool {
			return !slices.Contains(a.Finalizers, controller.PodCleanupFinalizer)
		})
	}
}

func TestAnUnparsableScheduleStallsOnceWithAWarningAndNoRetries(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "bad-schedule", badSchedule)
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatalf("the API server refused %q: pick a schedule its date-time format accepts: %v", badSchedule, err)
	}
	key := client.ObjectKeyFromObject(at)
	stalled := waitFor(t, c, key, "Stalled", func(a *atv1.At) bool { return status.IsTrue(a, status.TypeStalled) })
	cond, _ := status.FindCondition(stalled, status.TypeStalled)
	// The message names the field; errors.Message masks the time-like value
	// itself, as it masks every timestamp, to keep the message stable.
	if !strings.Contains(cond.Message, "spec.schedule") {
		t.Errorf("Stalled message %q does not name spec.schedule", cond.Message)
	}
	// A reconcile that read the At from a lagging cache before it stalled
	// has asked for a quiet requeue (100 ms, growing with each conflict),
	// which may fire after the client saw Stalled: let it run first. It
	// retries nothing; it finds the At stalled and writes nothing.
	before := settledReconciles(t, time.Second)
	time.Sleep(3 * time.Second) // long enough for several backoff retries, were there any
	if after := reconciles(t); after != before {
		t.Errorf("reconciles went from %v to %v after the At stalled: want no retries", before, after)
	}
	warnings := 0
	for _, e := range events(t, c, stalled) {
		if e.Type == corev1.EventTypeWarning {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("warning events = %d, want exactly 1", warnings)
	}
	if n := len(podsOf(t, c, stalled)); n != 0 {
		t.Errorf("a stalled At created %d pods", n)
	}
}

// badSchedule passes the CRD's `format: date-time` (whose pattern takes any
// two digits as a zone offset) but is not a time: there is no +99:00 zone.
const badSchedule = "2026-11-22T10:00:00+99:00"

func TestTheAtReconcilerConvergesAndWritesNothingOnceDone(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	var counter reconciletest.Counter
	loop, err := controller.New(controller.Options{Client: counter.Wrap(base), Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	at := newAt(ns, "converge", rfc3339(time.Now().Add(-time.Second)))
	if err := base.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(at)}
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))

	// The Pod finishes; the At converges to DONE and then writes nothing.
	running := &atv1.At{}
	if err := base.Get(t.Context(), req.NamespacedName, running); err != nil {
		t.Fatal(err)
	}
	finishPod(t, base, ns, running.Status.PodName, 0)
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	done := &atv1.At{}
	if err := base.Get(t.Context(), req.NamespacedName, done); err != nil {
		t.Fatal(err)
	}
	if done.Status.Phase != atv1.PhaseDone {
		t.Fatalf("phase = %q after converging, want DONE", done.Status.Phase)
	}
	counter.Reset()
	for i := 0; i < 5; i++ {
		if _, err := loop.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if w := counter.Writes(); len(w) != 0 {
		t.Errorf("5 resyncs of a DONE At wrote %d times: %v", len(w), w)
	}
}
