package reconcile_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// TestLoopMirrorsReadyAndFailuresOnTheProjectsOwnConditions: a Loop with
// kubebuilder's condition types mirrored keeps Available saying what Ready
// says and Degraded True exactly while the object fails, in the same status
// write, through a lifecycle: converged, a transient failure reported at
// once, a permanent one (Stalled), recovered. kubectl wait for Available
// works on the converged object, and the mirrors cost no write of their
// own.
func TestLoopMirrorsReadyAndFailuresOnTheProjectsOwnConditions(t *testing.T) {
	f, c := newLoopFixture(t)
	f.loop.Mirror = reconcile.Mirror{Ready: "Available", Failing: "Degraded"}
	f.loop.Recorder = events.NewFakeRecorder(16)
	ns := env.Namespace(t)
	req := createWidget(t, c, ns, "hello")

	type want struct {
		available, degraded metav1.ConditionStatus
		reason              string
	}
	check := func(step string, w want) {
		t.Helper()
		obj := getWidget(t, c, req)
		ready, _ := status.FindCondition(obj, status.TypeReady)
		available, ok1 := status.FindCondition(obj, "Available")
		degraded, ok2 := status.FindCondition(obj, "Degraded")
		if !ok1 || !ok2 {
			t.Fatalf("%s: conditions %+v, want Available and Degraded", step, obj.Status.Conditions)
		}
		if available.Status != ready.Status || available.Reason != ready.Reason || available.Message != ready.Message {
			t.Errorf("%s: Available %+v does not say what Ready %+v says", step, available, ready)
		}
		if available.Status != w.available || degraded.Status != w.degraded || degraded.Reason != w.reason {
			t.Errorf("%s: Available %s, Degraded %s (%s); want %s, %s (%s)", step, available.Status, degraded.Status, degraded.Reason, w.available, w.degraded, w.reason)
		}
		if degraded.Status == metav1.ConditionTrue && degraded.Message != ready.Message {
			t.Errorf("%s: Degraded message %q, want the failure's %q", step, degraded.Message, ready.Message)
		}
		if available.ObservedGeneration != obj.Generation || degraded.ObservedGeneration != obj.Generation {
			t.Errorf("%s: mirrors observed generation %d/%d, want %d", step, available.ObservedGeneration, degraded.ObservedGeneration, obj.Generation)
		}
	}
	reconcileOnce := func() {
		t.Helper()
		f.counter.Reset()
		_, _ = f.loop.Reconcile(t.Context(), req)
		if n := len(f.counter.Writes()); n > 2 { // finalizer and status at most
			t.Errorf("%d writes in one reconcile: %v", n, f.counter.Writes())
		}
	}

	reconcileOnce()
	reconcileOnce() // the finalizer's reconcile, then the status
	check("converged", want{metav1.ConditionTrue, metav1.ConditionFalse, status.ReasonSucceeded})
	out, err := exec.CommandContext(t.Context(), env.Kubectl(t), "--kubeconfig", env.Kubeconfig(t), "-n", ns,
		"wait", "--for=condition=Available", "widget/"+req.Name, "--timeout=30s").CombinedOutput()
	if err != nil {
		t.Errorf("kubectl wait --for=condition=Available: %v: %s", err, out)
	}

	f.failWith(errors.WithReason(fmt.Errorf("backend down"), "BackendDown"))
	f.loop.Policy = &requeue.Policy{ReportAfter: -1, Observe: func(context.Context, requeue.Decision) {}} // report at once
	reconcileOnce()
	check("transient failure", want{metav1.ConditionUnknown, metav1.ConditionTrue, "BackendDown"}) // Ready is Unknown while Reconciling

	f.failWith(errors.Permanent(errors.WithReason(fmt.Errorf("spec.size must be positive"), "InvalidSize")))
	reconcileOnce()
	check("stalled", want{metav1.ConditionFalse, metav1.ConditionTrue, "InvalidSize"})

	f.failWith(nil)
	reconcileOnce()
	check("recovered", want{metav1.ConditionTrue, metav1.ConditionFalse, status.ReasonSucceeded})

	f.counter.Reset()
	reconcileOnce()
	if w := f.counter.Writes(); len(w) != 0 {
		t.Errorf("a converged reconcile with mirrors wrote %v, want nothing", w)
	}
}

// TestLoopRefusesAMirrorOfItsOwnConditions: a Mirror that would overwrite
// Ready, Reconciling or Stalled, or names one type for both, fails
// Validate.
func TestLoopRefusesAMirrorOfItsOwnConditions(t *testing.T) {
	for _, m := range []reconcile.Mirror{{Ready: "Ready"}, {Failing: "Stalled"}, {Ready: "Reconciling"}, {Ready: "Available", Failing: "Available"}} {
		l := reconcile.New(env.Client(t), "loop-test", func(context.Context, *testapi.Widget) (reconcile.Progress, error) { return reconcile.Progress{}, nil })
		l.Mirror = m
		if err := l.Validate(); !errors.Is(err, reconcile.ErrInvalidLoop) || !strings.Contains(err.Error(), "Mirror") {
			t.Errorf("Validate with %+v = %v, want ErrInvalidLoop naming Mirror", m, err)
		}
	}
}
