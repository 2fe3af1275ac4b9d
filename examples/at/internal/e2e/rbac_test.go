package e2e_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
)

// TestOperatorRunsAsItsServiceAccount runs the operator with nothing but
// the service account's token, so with nothing but the roles config/default
// grants it (the generated one among them), and takes Ats through every
// step of their lives: PENDING, RUNNING, DONE succeeded and failed, deleted
// in each phase (a running At's Pod deleted by the finalizer), with events
// and leader election. A missing permission fails a step, or shows as a
// "forbidden" error in the operator's log, which fails the test too.
//
// The operator is given no --leader-election-namespace: it takes the
// namespace of its kubeconfig's context, as out of a cluster.
func TestOperatorRunsAsItsServiceAccount(t *testing.T) {
	deploy(t)
	bin := buildOperator(t)
	admin := env.Client(t)
	ns := env.Namespace(t)
	deleteLease(t)
	kubeconfig, _ := serviceAccountKubeconfig(t, operatorNamespace)
	probes := freeAddr(t)
	op := startOperator(t, bin, "operator", "--kubeconfig", kubeconfig,
		"--metrics-bind-address=0", "--health-probe-bind-address", probes, "--workers=2")
	waitReady(t, op, probes)
	waitLeaseHolder(t, op) // in at-system, the context's namespace: the test deleted the Lease there

	due := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ats := map[string]*atv1.At{}
	for name, schedule := range map[string]string{"succeeds": due, "fails": due, "deleted-running": due, "deleted-pending": later} {
		at := &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: atv1.AtSpec{Schedule: schedule, Command: "echo " + name}}
		if err := admin.Create(t.Context(), at); err != nil {
			t.Fatal(err)
		}
		ats[name] = at
	}

	running := func(at *atv1.At) bool { return at.Status.Phase == atv1.PhaseRunning && at.Status.PodName != "" }
	for _, name := range []string{"succeeds", "fails", "deleted-running"} {
		ats[name] = waitAt(t, admin, ats[name], "RUNNING with a Pod", running)
	}
	waitAt(t, admin, ats["deleted-pending"], "PENDING", func(at *atv1.At) bool { return at.Status.Phase == atv1.PhasePending })

	finishPod(t, admin, ats["succeeds"], 0)
	finishPod(t, admin, ats["fails"], 3)
	waitAt(t, admin, ats["succeeds"], "DONE, succeeded", func(at *atv1.At) bool {
		return at.Status.Phase == atv1.PhaseDone && at.Status.Outcome == atv1.OutcomeSucceeded
	})
	waitAt(t, admin, ats["fails"], "DONE, failed with exit code 3", func(at *atv1.At) bool {
		return at.Status.Phase == atv1.PhaseDone && at.Status.Outcome == atv1.OutcomeFailed &&
			at.Status.ExitCode != nil && *at.Status.ExitCode == 3
	})

	// Deletion, in every phase: the finalizer runs and lets the At go; a
	// running At's Pod is deleted first.
	for _, name := range []string{"succeeds", "deleted-running", "deleted-pending"} {
		if err := admin.Delete(t.Context(), ats[name]); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"succeeds", "deleted-running", "deleted-pending"} {
		waitGone(t, admin, ats[name])
	}
	pod := &corev1.Pod{}
	err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: ats["deleted-running"].Status.PodName}, pod)
	if !apierrors.IsNotFound(err) {
		t.Errorf("the deleted running At's Pod: got %v (deletionTimestamp %v), want it deleted", err, pod.DeletionTimestamp)
	}

	// Events: the controller's (events.k8s.io, any namespace) and leader
	// election's (core/v1, in at-system).
	waitEvent(t, admin, "a PodDeleted event from the controller", &eventsv1.EventList{}, client.InNamespace(ns), func(l client.ObjectList) bool {
		for _, e := range l.(*eventsv1.EventList).Items {
			if e.Reason == controller.ReasonPodDeleted && e.Regarding.Name == "deleted-running" && e.ReportingController == controller.Name {
				return true
			}
		}
		return false
	})
	waitEvent(t, admin, "a LeaderElection event", &corev1.EventList{}, client.InNamespace(operatorNamespace), func(l client.ObjectList) bool {
		for _, e := range l.(*corev1.EventList).Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == leaseName {
				return true
			}
		}
		return false
	})

	op.signal(t, syscall.SIGTERM)
	if !op.wait(time.Minute) {
		t.Fatal("the operator did not stop within a minute of SIGTERM")
	}
	if op.exitCode() != 0 {
		t.Errorf("the operator exited with %v, want 0", op.waitErr)
	}
	logs := op.logs(t)
	if strings.Contains(strings.ToLower(logs), "forbidden") {
		t.Errorf("the operator was refused something it needs:\n%s", grep(logs, "forbidden"))
	}
}

// TestServiceAccountIsRefusedOutsideItsRole shows the operator's service
// account is not a cluster admin: what its roles grant works (so a refusal
// below is RBAC's, not a broken client), and what they do not is Forbidden.
func TestServiceAccountIsRefusedOutsideItsRole(t *testing.T) {
	deploy(t)
	ns := env.Namespace(t)
	_, sa := serviceAccountKubeconfig(t, "")
	dryRun := client.DryRunAll
	lease := func(namespace string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"}}
	}
	tests := []struct {
		name    string
		do      func(ctx context.Context) error
		allowed bool
	}{
		{"list Ats in every namespace", func(ctx context.Context) error { return sa.List(ctx, &atv1.AtList{}) }, true},
		{"create a Pod", func(ctx context.Context) error {
			return sa.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, dryRun)
		}, true},
		{"create a Lease in at-system", func(ctx context.Context) error { return sa.Create(ctx, lease(operatorNamespace), dryRun) }, true},

		{"list Secrets in every namespace", func(ctx context.Context) error { return sa.List(ctx, &corev1.SecretList{}) }, false},
		{"list Secrets in at-system", func(ctx context.Context) error {
			return sa.List(ctx, &corev1.SecretList{}, client.InNamespace(operatorNamespace))
		}, false},
		{"delete a namespace", func(ctx context.Context) error {
			return sa.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, dryRun)
		}, false},
		{"create a Lease outside at-system", func(ctx context.Context) error { return sa.Create(ctx, lease(ns), dryRun) }, false},
		{"create a ConfigMap", func(ctx context.Context) error {
			return sa.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}, dryRun)
		}, false},
		{"bind itself to cluster-admin", func(ctx context.Context) error {
			return sa.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "at-escalation-probe"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: serviceAccount}},
			}, dryRun)
		}, false},
		{"delete Events", func(ctx context.Context) error {
			return sa.DeleteAllOf(ctx, &eventsv1.Event{}, client.InNamespace(ns))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t.Context())
			switch {
			case tt.allowed && err != nil:
				t.Errorf("%s was refused: %v", serviceAccountUser, err)
			case !tt.allowed && !apierrors.IsForbidden(err):
				t.Errorf("%s: got %v, want Forbidden", serviceAccountUser, err)
			}
		})
	}
}

// waitAt polls the At until cond holds and returns it.
func waitAt(t *testing.T, c client.Client, at *atv1.At, what string, cond func(*atv1.At) bool) *atv1.At {
	t.Helper()
	got := &atv1.At{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(at), got); err != nil {
			return false, err
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for At %s to be %s: %v; last seen: phase=%q outcome=%q conditions=%+v",
			at.Name, what, err, got.Status.Phase, got.Status.Outcome, got.Status.Conditions)
	}
	return got
}

func waitGone(t *testing.T, c client.Client, at *atv1.At) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(at), &atv1.At{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("waiting for the deleted At %s to go: %v", at.Name, err)
	}
}

func waitEvent(t *testing.T, c client.Client, what string, list client.ObjectList, opt client.ListOption, found func(client.ObjectList) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, list, opt); err != nil {
			return false, err
		}
		return found(list), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// finishPod does what a kubelet does when the At's command exits.
func finishPod(t *testing.T, c client.Client, at *atv1.At, exit int32) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: at.Namespace, Name: at.Status.PodName}, pod); err != nil {
		t.Fatal(err)
	}
	podtest.Finish(pod, exit)
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatalf("set pod %s %s: %v", pod.Name, pod.Status.Phase, err)
	}
}

// grep returns the lines of s that contain substr, case-insensitively.
func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), strings.ToLower(substr)) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
