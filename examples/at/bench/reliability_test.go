package bench_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/status"
)

// Sizes of the reliability tests; `go test` runs them at these defaults,
// larger runs pass bigger values after -args.
var (
	faultAts   = flag.Int("at.faults.n", 200, "Ats in the fault-injection test")
	faultRate  = flag.Float64("at.faults.rate", 0.2, "fraction of the controller's requests that fail in the fault-injection test")
	faultSeed  = flag.Uint64("at.faults.seed", 1, "seed of the injected faults")
	restartAts = flag.Int("at.restart.n", 100, "Ats in the crash-and-restart test")
	restarts   = flag.Int("at.restart.times", 5, "manager restarts in the crash-and-restart test")
)

// spreadAts returns n Ats named prefix-i, scheduled evenly over spread,
// starting once there has been time to create them all.
func spreadAts(ns, prefix string, n int, spread time.Duration) []*atv1.At {
	first := time.Now().Add(time.Second + time.Duration(n)*10*time.Millisecond)
	ats := make([]*atv1.At, n)
	for i := range ats {
		when := first
		if n > 1 {
			when = first.Add(spread * time.Duration(i) / time.Duration(n-1))
		}
		ats[i] = newAt(ns, fmt.Sprintf("%s-%04d", prefix, i), when)
	}
	return ats
}

// checkOnePodEach fails the test unless the API server accepted exactly one
// Pod create for each At, and the kubelet saw exactly one Pod for each.
func checkOnePodEach(t *testing.T, ats []*atv1.At, creates *createLog, kl *kubelet) {
	t.Helper()
	accepted, seen := creates.byAt(), kl.podsSeen()
	for _, at := range ats {
		// accepted is what the controller's client was told. A create
		// whose request was cut short (a manager stopped mid-request, a
		// lost response) may have been stored while the client saw an
		// error, so it can be 0; the kubelet's count below is the server's
		// truth: exactly one Pod ever existed.
		if n := len(accepted[at.Name]); n > 1 {
			t.Errorf("At %s: %d Pod creates accepted by the API server, want at most 1", at.Name, n)
		}
		if n := seen[at.Name]; n != 1 {
			t.Errorf("At %s: the kubelet saw %d distinct Pods, want exactly 1", at.Name, n)
		}
	}
}

// checkDoneAndFinalized fails the test unless every At of ns is DONE,
// Succeeded, Ready, and still carries the controller's finalizer.
func checkDoneAndFinalized(t *testing.T, c client.Client, ns string) []atv1.At {
	t.Helper()
	var list atv1.AtList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, at := range list.Items {
		if at.Status.Phase != atv1.PhaseDone || at.Status.Outcome != atv1.OutcomeSucceeded || !status.IsTrue(&at, status.TypeReady) {
			t.Errorf("At %s: phase %q outcome %q conditions %v, want DONE, Succeeded, Ready", at.Name, at.Status.Phase, at.Status.Outcome, at.Status.Conditions)
		}
		if !controllerutil.ContainsFinalizer(&at, controller.PodCleanupFinalizer) {
			t.Errorf("At %s lost its finalizer: %v", at.Name, at.Finalizers)
		}
		if at.Status.ObservedGeneration != at.Generation {
			t.Errorf("At %s: observedGeneration %d, generation %d", at.Name, at.Status.ObservedGeneration, at.Generation)
		}
	}
	return list.Items
}

func TestUnderInjectedFaultsEveryAtEndsDoneWithExactlyOnePod(t *testing.T) {
	env.Require(t)
	t.Parallel() // beside the scenarios; one manager at a time (lockManagers)
	lockManagers(t)
	c := env.Client(t)
	ns := env.Namespace(t)
	kl := startKubelet(t, ns, podRunTime)
	tr := startTracker(t, ns)

	writes := []reconciletest.Verb{reconciletest.VerbCreate, reconciletest.VerbUpdate, reconciletest.VerbPatch,
		reconciletest.VerbDelete, reconciletest.VerbStatusUpdate, reconciletest.VerbStatusPatch}
	// The controller's cached reads never reach the API server; its
	// writes and its uncached reads do, and fail at the given rate with
	// conflicts, 429 with Retry-After, 500, 504 and client timeouts.
	writeFaults, err := reconciletest.NewFaultInjector(*faultSeed, reconciletest.Rate(*faultRate), reconciletest.OnlyVerbs(writes...))
	if err != nil {
		t.Fatal(err)
	}
	readFaults, err := reconciletest.NewFaultInjector(*faultSeed+1, reconciletest.Rate(*faultRate))
	if err != nil {
		t.Fatal(err)
	}
	// And some Pod creates succeed but their response is lost.
	rng := rand.New(rand.NewPCG(*faultSeed, 2))
	lost := &lossyCreates{rate: *faultRate, next: rng.Float64}
	creates := &createLog{}
	var counter reconciletest.Counter
	startController(t, libraryAt, ns, wiring{counter: &counter, faults: writeFaults, readFaults: readFaults, creates: creates, lostResponses: lost})

	ats := spreadAts(ns, "fault", *faultAts, 3*time.Second)
	createAll(t, c, ats)
	tr.waitDone(t, len(ats), 3*time.Minute)

	checkOnePodEach(t, ats, creates, kl)
	checkDoneAndFinalized(t, c, ns)
	byFault := map[reconciletest.Fault]int{}
	for _, in := range append(writeFaults.Injected(), readFaults.Injected()...) {
		byFault[in.Fault]++
	}
	t.Logf("%d Ats: injected %v into %d writes and %d uncached reads; %d Pod create responses lost; requests by verb:\n%s",
		len(ats), byFault, writeFaults.Matched(), readFaults.Matched(), lost.lost.Load(), counter.String())
	if len(writeFaults.Injected()) == 0 || lost.lost.Load() == 0 {
		t.Fatalf("no fault was injected: the test proves nothing")
	}

	// Deleting under faults: the finalizer still runs and lets every At
	// go (a DONE At's finished Pod is left to the garbage collector, which
	// envtest does not run), and deletion creates no Pod.
	deleteAll(t, c, ns)
	tr.waitGone(t, 2*time.Minute)
	checkOnePodEach(t, ats, creates, kl)
}

func TestRestartingTheManagerAtRandomPointsCreatesNoSecondPod(t *testing.T) {
	env.Require(t)
	t.Parallel() // beside the scenarios; one manager at a time (lockManagers)
	lockManagers(t)
	c := env.Client(t)
	ns := env.Namespace(t)
	kl := startKubelet(t, ns, 500*time.Millisecond)
	tr := startTracker(t, ns)
	creates := &createLog{}
	rng := rand.New(rand.NewPCG(7, 7))

	ats := spreadAts(ns, "restart", *restartAts, 4*time.Second)
	run := startController(t, libraryAt, ns, wiring{creates: creates})
	createAll(t, c, ats)
	for i := range *restarts {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		run.stop()
		t.Logf("restart %d: %d Pods created so far", i+1, len(creates.byAt()))
		run = startController(t, libraryAt, ns, wiring{creates: creates})
	}
	tr.waitDone(t, len(ats), 3*time.Minute)
	checkOnePodEach(t, ats, creates, kl)
	checkDoneAndFinalized(t, c, ns)
}

// A second writer (another controller, a policy agent, a human with
// kubectl) adds its own finalizer and conditions to the Ats while the At
// controller runs them; none of its writes may be lost.
func TestASecondWritersFinalizerAndConditionsSurvive(t *testing.T) {
	env.Require(t)
	t.Parallel() // beside the scenarios; one manager at a time (lockManagers)
	lockManagers(t)
	c := env.Client(t)
	ns := env.Namespace(t)
	startKubelet(t, ns, podRunTime)
	tr := startTracker(t, ns)
	startController(t, libraryAt, ns, wiring{})

	const theirFinalizer = "audit.example.com/keep"
	theirConditions := []string{"AuditPassed", "AuditLogged"}
	ats := spreadAts(ns, "shared", 30, 2*time.Second)
	createAll(t, c, ats)

	other := env.Client(t)
	writer := make(chan error, 1)
	go func() {
		writer <- func() error {
			// Round 0 right after creation, then one condition per round
			// while the Ats go PENDING -> RUNNING -> DONE.
			for round := range len(theirConditions) + 1 {
				for _, at := range ats {
					key := client.ObjectKeyFromObject(at)
					err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
						cur := &atv1.At{}
						if err := other.Get(context.Background(), key, cur); err != nil {
							return err
						}
						if round == 0 {
							controllerutil.AddFinalizer(cur, theirFinalizer)
							return other.Update(context.Background(), cur)
						}
						meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: theirConditions[round-1],
							Status: metav1.ConditionTrue, Reason: "Audited", Message: "written by another client"})
						return other.Status().Update(context.Background(), cur)
					})
					if err != nil {
						return fmt.Errorf("round %d, At %s: %w", round, at.Name, err)
					}
				}
				time.Sleep(1200 * time.Millisecond)
			}
			return nil
		}()
	}()
	if err := <-writer; err != nil {
		t.Fatalf("the second writer: %v", err)
	}
	tr.waitDone(t, len(ats), 2*time.Minute)
	for _, at := range checkDoneAndFinalized(t, c, ns) {
		if !controllerutil.ContainsFinalizer(&at, theirFinalizer) {
			t.Errorf("At %s lost the other writer's finalizer: %v", at.Name, at.Finalizers)
		}
		for _, typ := range theirConditions {
			if !meta.IsStatusConditionTrue(at.Status.Conditions, typ) {
				t.Errorf("At %s lost the other writer's condition %s: %v", at.Name, typ, at.Status.Conditions)
			}
		}
	}

	// On deletion the controller removes only its own finalizer.
	deleteAll(t, c, ns)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var list atv1.AtList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, at := range list.Items {
			if controllerutil.ContainsFinalizer(&at, controller.PodCleanupFinalizer) {
				return false, nil
			}
			if !controllerutil.ContainsFinalizer(&at, theirFinalizer) {
				return false, fmt.Errorf("At %s lost the other writer's finalizer on deletion: %v", at.Name, at.Finalizers)
			}
		}
		return len(list.Items) == len(ats), nil
	})
	if err != nil {
		t.Fatalf("deleting: %v\n%s", err, tr.describe())
	}
}

func TestTheAPIServerRejectsInvalidAts(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	tests := []struct {
		name              string
		schedule, command string
		wantRejected      bool
	}{
		{name: "schedule that is not a time", schedule: "tomorrow at noon", command: "true", wantRejected: true},
		{name: "empty schedule", schedule: "", command: "true", wantRejected: true},
		{name: "empty command", schedule: "2030-01-01T00:00:00Z", command: "", wantRejected: true},
		{name: "command one byte too long", schedule: "2030-01-01T00:00:00Z", command: strings.Repeat("x", atv1.MaxCommandLength+1), wantRejected: true},
		{name: "command of the maximum length", schedule: "2030-01-01T00:00:00Z", command: strings.Repeat("x", atv1.MaxCommandLength)},
		{name: "fractional seconds and an offset", schedule: "2030-01-01T00:00:00.5+02:00", command: "true"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("input-%d", i)},
				Spec: atv1.AtSpec{Schedule: tt.schedule, Command: tt.command}}
			err := c.Create(t.Context(), at)
			if tt.wantRejected && !apierrors.IsInvalid(err) {
				t.Errorf("Create = %v, want the API server to reject it as invalid", err)
			}
			if !tt.wantRejected && err != nil {
				t.Errorf("Create = %v, want it accepted", err)
			}
		})
	}
}

// Inputs the API server accepts but the controller cannot or must not act
// on each have a defined outcome, and none makes the controller loop.
func TestBadInputHasADefinedOutcomeAndNoHotLoop(t *testing.T) {
	env.Require(t)
	t.Parallel() // beside the scenarios; one manager at a time (lockManagers)
	lockManagers(t)
	c := env.Client(t)
	ns := env.Namespace(t)
	kl := startKubelet(t, ns, 0)
	tr := startTracker(t, ns)
	startController(t, libraryAt, ns, wiring{})

	// A zone offset the CRD's date-time pattern accepts but that is not a
	// time: Stalled, one Warning event, no Pod (the controller's rule).
	unparsable := newAt(ns, "unparsable", time.Now())
	unparsable.Spec.Schedule = "2026-11-22T10:00:00+99:00"
	// Far in the future: PENDING, one timer, no Pod.
	future := newAt(ns, "far-future", time.Now())
	future.Spec.Schedule = "9999-12-31T23:59:59Z"
	// Edited while RUNNING: recorded (observedGeneration follows), the
	// running Pod untouched, no second Pod (examples/at/README.md).
	edited := newAt(ns, "edited", time.Now().Add(-time.Second))
	kl.hold(edited.Name)
	createAll(t, c, []*atv1.At{unparsable, future, edited})

	waitAt(t, c, unparsable, "Stalled", func(a *atv1.At) bool { return status.IsTrue(a, status.TypeStalled) })
	waitAt(t, c, future, "PENDING", func(a *atv1.At) bool {
		return a.Status.Phase == atv1.PhasePending && status.IsTrue(a, status.TypeReconciling)
	})
	running := waitAt(t, c, edited, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	running.Spec.Command = "echo edited"
	if err := c.Update(t.Context(), running); err != nil {
		t.Fatal(err)
	}
	waitAt(t, c, edited, "observedGeneration 2", func(a *atv1.At) bool { return a.Status.ObservedGeneration == 2 })

	// Settled: from now on nothing may reconcile, however long we wait.
	time.Sleep(500 * time.Millisecond)
	before := reconciles(t, libraryAt.controllerName())
	time.Sleep(3 * time.Second)
	if after := reconciles(t, libraryAt.controllerName()); after != before {
		t.Errorf("%v reconciles in 3 s after every At settled, want 0 (a hot loop)", after-before)
	}

	stalled := getAt(t, c, unparsable)
	if cond, _ := status.FindCondition(stalled, status.TypeStalled); !strings.Contains(cond.Message, "spec.schedule") {
		t.Errorf("Stalled message %q does not name spec.schedule", cond.Message)
	}
	if n := warnings(t, c, stalled); n != 1 {
		t.Errorf("%d Warning events for the unparsable schedule, want 1", n)
	}
	pods := kl.podsSeen()
	if pods[unparsable.Name] != 0 || pods[future.Name] != 0 {
		t.Errorf("Pods for the unparsable and the far-future At: %d and %d, want none", pods[unparsable.Name], pods[future.Name])
	}
	if pods[edited.Name] != 1 {
		t.Errorf("Pods for the At edited while RUNNING: %d, want 1", pods[edited.Name])
	}
	pod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: running.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pod.Spec.Containers[0].Command, " "); got != "/bin/sh -c echo hello" {
		t.Errorf("the running Pod's command became %q; an edit must not touch it", got)
	}

	// Released, the edited At finishes normally.
	kl.release(t.Context(), ns, edited.Name)
	tr.waitDone(t, 1, time.Minute)
	if done := getAt(t, c, edited); done.Status.Phase != atv1.PhaseDone || done.Status.ObservedGeneration != 2 {
		t.Errorf("edited At: phase %q observedGeneration %d, want DONE and 2", done.Status.Phase, done.Status.ObservedGeneration)
	}
}

func getAt(t *testing.T, c client.Client, at *atv1.At) *atv1.At {
	t.Helper()
	got := &atv1.At{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(at), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// waitAt polls the At until cond holds, failing the test after 30 s.
func waitAt(t *testing.T, c client.Client, at *atv1.At, what string, cond func(*atv1.At) bool) *atv1.At {
	t.Helper()
	got := &atv1.At{}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(at), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("At %s: waiting for %s: %v; last seen phase %q conditions %v", at.Name, what, err, got.Status.Phase, got.Status.Conditions)
	}
	return got
}

func warnings(t *testing.T, c client.Client, at *atv1.At) int {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(t.Context(), &list, client.InNamespace(at.Namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.UID == at.UID && e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}
