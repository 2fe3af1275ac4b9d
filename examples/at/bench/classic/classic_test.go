package classic_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/classic"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := atv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// setup returns the reconciler on a counted fake client holding objs.
func setup(t *testing.T, objs ...client.Object) (*classic.Reconciler, client.Client, *reconciletest.Counter) {
	t.Helper()
	s := newScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&atv1.At{}, &corev1.Pod{}).Build()
	var counter reconciletest.Counter
	return &classic.Reconciler{Client: counter.Wrap(c), Scheme: s, Clock: clocktesting.NewFakePassiveClock(now)}, c, &counter
}

func at(schedule string, st atv1.AtStatus) *atv1.At {
	return &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1"},
		Spec: atv1.AtSpec{Schedule: schedule, Command: "true"}, Status: st}
}

func pod(phase corev1.PodPhase, exit int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-pod"}, Status: corev1.PodStatus{Phase: phase}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}
	}
	return p
}

func TestClassicReconcilerStepsOnePhasePerReconcile(t *testing.T) {
	running := atv1.AtStatus{Phase: atv1.PhaseRunning, PodName: "a-pod"}
	tests := []struct {
		name        string
		at          *atv1.At
		pod         *corev1.Pod
		wantPhase   atv1.Phase
		wantOutcome atv1.Outcome
		wantRequeue time.Duration
		wantWrites  []reconciletest.Verb
	}{
		{name: "new, before the schedule: PENDING and a timer", at: at("2026-11-22T10:00:30Z", atv1.AtStatus{}),
			wantPhase: atv1.PhasePending, wantRequeue: 30 * time.Second, wantWrites: []reconciletest.Verb{reconciletest.VerbStatusUpdate}},
		{name: "PENDING, before the schedule: no write", at: at("2026-11-22T10:00:30Z", atv1.AtStatus{Phase: atv1.PhasePending}),
			wantPhase: atv1.PhasePending, wantRequeue: 30 * time.Second},
		{name: "PENDING at the schedule: RUNNING, no Pod yet", at: at("2026-11-22T10:00:00Z", atv1.AtStatus{Phase: atv1.PhasePending}),
			wantPhase: atv1.PhaseRunning, wantWrites: []reconciletest.Verb{reconciletest.VerbStatusUpdate}},
		{name: "RUNNING without a Pod: r.Create", at: at("2026-11-22T10:00:00Z", running),
			wantPhase: atv1.PhaseRunning, wantWrites: []reconciletest.Verb{reconciletest.VerbCreate}},
		{name: "RUNNING with a running Pod: nothing", at: at("2026-11-22T10:00:00Z", running), pod: pod(corev1.PodRunning, 0),
			wantPhase: atv1.PhaseRunning},
		{name: "RUNNING with a Succeeded Pod: DONE", at: at("2026-11-22T10:00:00Z", running), pod: pod(corev1.PodSucceeded, 0),
			wantPhase: atv1.PhaseDone, wantOutcome: atv1.OutcomeSucceeded, wantWrites: []reconciletest.Verb{reconciletest.VerbStatusUpdate}},
		{name: "RUNNING with a Failed Pod: DONE, failed", at: at("2026-11-22T10:00:00Z", running), pod: pod(corev1.PodFailed, 2),
			wantPhase: atv1.PhaseDone, wantOutcome: atv1.OutcomeFailed, wantWrites: []reconciletest.Verb{reconciletest.VerbStatusUpdate}},
		{name: "DONE: nothing", at: at("2026-11-22T10:00:00Z", atv1.AtStatus{Phase: atv1.PhaseDone, Outcome: atv1.OutcomeSucceeded}),
			wantPhase: atv1.PhaseDone, wantOutcome: atv1.OutcomeSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.at}
			if tt.pod != nil {
				objs = append(objs, tt.pod)
			}
			r, c, counter := setup(t, objs...)
			res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tt.at)})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, tt.wantRequeue)
			}
			got := &atv1.At{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(tt.at), got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tt.wantPhase || got.Status.Outcome != tt.wantOutcome {
				t.Errorf("phase, outcome = %q, %q; want %q, %q", got.Status.Phase, got.Status.Outcome, tt.wantPhase, tt.wantOutcome)
			}
			var verbs []reconciletest.Verb
			for _, w := range counter.Writes() {
				verbs = append(verbs, w.Verb)
			}
			if len(verbs) != len(tt.wantWrites) || (len(verbs) > 0 && verbs[0] != tt.wantWrites[0]) {
				t.Errorf("writes = %v, want %v", verbs, tt.wantWrites)
			}
		})
	}
}

func TestClassicReconcilerCreatesAnOwnedPodThatRunsTheCommand(t *testing.T) {
	a := at("2026-11-22T10:00:00Z", atv1.AtStatus{Phase: atv1.PhaseRunning, PodName: "a-pod"})
	r, c, _ := setup(t, a)
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(a)}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: classic.PodName(a)}, p); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != a.UID {
		t.Errorf("controller of the Pod = %v, want the At", ref)
	}
	if got := p.Spec.Containers[0].Command; len(got) != 3 || got[2] != "true" || p.Spec.Containers[0].Image != atv1.DefaultImage {
		t.Errorf("container = %+v", p.Spec.Containers[0])
	}
	if p.Labels[classic.AtLabel] != a.Name || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("labels %v restartPolicy %q", p.Labels, p.Spec.RestartPolicy)
	}
}

// The classic way: a bad schedule is an error returned as it is, and the
// workqueue retries it with backoff, for ever.
func TestClassicReconcilerReturnsABadScheduleAsAnError(t *testing.T) {
	a := at("2026-11-22T10:00:00+99:00", atv1.AtStatus{})
	r, _, counter := setup(t, a)
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(a)}); err == nil {
		t.Fatal("Reconcile = nil error, want the parse error")
	}
	if w := counter.Writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none", w)
	}
}

func TestClassicReconcilerIgnoresAGoneAt(t *testing.T) {
	r, _, _ := setup(t)
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "gone"}})
	if err != nil || !res.IsZero() {
		t.Errorf("Reconcile = %+v, %v; want zero and nil", res, err)
	}
}

func TestPodNameStaysAValidName(t *testing.T) {
	long := &atv1.At{ObjectMeta: metav1.ObjectMeta{Name: "a123456789b123456789c123456789d123456789e123456789f123456789g1234"}}
	if n := classic.PodName(long); len(n) > 63 {
		t.Errorf("PodName = %q (%d bytes), want at most 63", n, len(n))
	}
}
