package controller_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// TestASuspendedAtStartsNoPodAndStartsItAtOnceWhenResumed: an At created
// suspended, already due, gets no finalizer and no Pod, only its Suspended
// condition (kstatus: InProgress, not Current); the one reconcile after it
// is resumed starts its Pod.
func TestASuspendedAtStartsNoPodAndStartsItAtOnceWhenResumed(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	var counter reconciletest.Counter
	loop, err := controller.New(controller.Options{Client: counter.Wrap(base), Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	at := newAt(ns, "suspended", rfc3339(time.Now().Add(-time.Second)))
	at.Spec.Suspend = true
	if err := base.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(at)}
	for range 3 {
		if _, err := loop.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if w := counter.Writes(); len(w) != 1 || w[0].Verb != reconciletest.VerbStatusPatch {
		t.Errorf("writes of 3 reconciles of a suspended At = %v, want its one status patch", w)
	}
	if err := base.Get(t.Context(), req.NamespacedName, at); err != nil {
		t.Fatal(err)
	}
	if pods := podsOf(t, base, at); len(pods) != 0 || at.Status.Phase != "" || len(at.Finalizers) != 0 {
		t.Errorf("suspended At: %d pods, phase %q, finalizers %v; want none of them", len(pods), at.Status.Phase, at.Finalizers)
	}
	if !status.IsTrue(at, suspend.TypeSuspended) {
		t.Errorf("conditions = %+v, want Suspended", at.Status.Conditions)
	}
	if got := kstatusOf(t, at); got != kstatus.InProgressStatus {
		t.Errorf("kstatus of an At suspended before its first reconcile = %s, want InProgress", got)
	}

	before := at.DeepCopy()
	at.Spec.Suspend = false
	if err := base.Patch(t.Context(), at, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := base.Get(t.Context(), req.NamespacedName, at); err != nil {
		t.Fatal(err)
	}
	if pods := podsOf(t, base, at); len(pods) != 1 || at.Status.Phase != atv1.PhaseRunning || status.IsTrue(at, suspend.TypeSuspended) {
		t.Errorf("after the one reconcile that resumes: %d pods, phase %q, conditions %+v; want 1 pod, RUNNING, not Suspended",
			len(pods), at.Status.Phase, at.Status.Conditions)
	}
}

// waitReconciles waits until the "at" controller has reconciled n times in
// all (reconciles).
func waitReconciles(t *testing.T, n float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return reconciles(t) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %v reconciles of the at controller (%v so far): %v", n, reconciles(t), err)
	}
}

func kstatusOf(t *testing.T, at *atv1.At) kstatus.Status {
	t.Helper()
	at = at.DeepCopy()
	at.APIVersion, at.Kind = atv1.GroupVersion.String(), "At"
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(at)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// TestUsersSuspendAndRequestReconcilesWithKubectl drives the At controller,
// under a real manager, as a user would with kubectl: suspend a running At
// and wait for the Suspended condition; let its Pod finish and request a
// reconcile meanwhile (the At stays RUNNING, the request waits); resume it
// and wait for DONE, the request handled; then request a reconcile of the
// DONE At and wait for the token in status.lastHandledReconcileAt, as flux
// reconcile waits.
func TestUsersSuspendAndRequestReconcilesWithKubectl(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, "controlled", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(at)
	running := waitFor(t, c, key, "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	kubectl := func(args ...string) {
		t.Helper()
		args = append([]string{"--kubeconfig", env.Kubeconfig(t), "-n", ns}, args...)
		if out, err := exec.CommandContext(t.Context(), env.Kubectl(t), args...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v: %s", args, err, out)
		}
	}

	kubectl("patch", "at/controlled", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	kubectl("wait", "--for=condition=Suspended", "at/controlled", "--timeout=30s")
	// The Pod finishes, and a reconcile is requested: each wakes the
	// controller, which finds the At suspended and does nothing.
	n := reconciles(t)
	finishPod(t, c, ns, running.Status.PodName, 0)
	waitReconciles(t, n+1)
	n = reconciles(t)
	kubectl("annotate", "--overwrite", "at/controlled", request.Annotation+"=while-suspended")
	waitReconciles(t, n+1)
	suspended := &atv1.At{}
	if err := c.Get(t.Context(), key, suspended); err != nil {
		t.Fatal(err)
	}
	if suspended.Status.Phase != atv1.PhaseRunning || suspended.Status.LastHandledReconcileAt != "" {
		t.Errorf("suspended At: phase %q, lastHandledReconcileAt %q; want RUNNING, and no request handled while suspended",
			suspended.Status.Phase, suspended.Status.LastHandledReconcileAt)
	}

	kubectl("patch", "at/controlled", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	done := waitFor(t, c, key, "DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
	if status.IsTrue(done, suspend.TypeSuspended) || done.Status.LastHandledReconcileAt != "while-suspended" {
		t.Errorf("resumed At: conditions %+v, lastHandledReconcileAt %q; want no Suspended, and the request made while suspended handled",
			done.Status.Conditions, done.Status.LastHandledReconcileAt)
	}

	token := time.Now().UTC().Format(time.RFC3339Nano)
	kubectl("annotate", "--overwrite", "at/controlled", request.Annotation+"="+token)
	kubectl("wait", "--for=jsonpath={.status.lastHandledReconcileAt}="+token, "at/controlled", "--timeout=30s")
	kubectl("wait", "--for=condition=Ready", "at/controlled", "--timeout=0")
	if pods := podsOf(t, c, done); len(pods) != 1 {
		t.Errorf("pods of the At = %d, want its one", len(pods))
	}
}

// TestARequestOnADoneAtCostsOneStatusWrite: a request reconciles a DONE At,
// which changes nothing but records the token, in one status write; the
// same token again writes nothing.
func TestARequestOnADoneAtCostsOneStatusWrite(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	var counter reconciletest.Counter
	loop, err := controller.New(controller.Options{Client: counter.Wrap(base), Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	at := newAt(ns, "requested", rfc3339(time.Now().Add(-time.Second)))
	if err := base.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(at)}
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))
	if err := base.Get(t.Context(), req.NamespacedName, at); err != nil {
		t.Fatal(err)
	}
	finishPod(t, base, ns, at.Status.PodName, 0)
	reconciletest.Converge(t, loop, req, reconciletest.WithCounter(&counter))

	if err := base.Get(t.Context(), req.NamespacedName, at); err != nil {
		t.Fatal(err)
	}
	before := at.DeepCopy()
	metav1.SetMetaDataAnnotation(&at.ObjectMeta, request.Annotation, "t1")
	if err := base.Patch(t.Context(), at, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	for range 3 {
		if _, err := loop.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if w := counter.Writes(); len(w) != 1 || w[0].Verb != reconciletest.VerbStatusPatch {
		t.Errorf("writes of 3 reconciles after a request on a DONE At = %v, want the one status patch recording it", w)
	}
	if err := base.Get(t.Context(), req.NamespacedName, at); err != nil {
		t.Fatal(err)
	}
	if at.Status.LastHandledReconcileAt != "t1" || at.Status.Phase != atv1.PhaseDone || !status.IsTrue(at, status.TypeReady) {
		t.Errorf("lastHandledReconcileAt %q, phase %q, conditions %+v; want t1, DONE, Ready", at.Status.LastHandledReconcileAt, at.Status.Phase, at.Status.Conditions)
	}
	var pods corev1.PodList
	if err := base.List(t.Context(), &pods, client.InNamespace(ns)); err != nil || len(pods.Items) != 1 {
		t.Errorf("pods = %d (%v), want the At's one: a request never runs the command again", len(pods.Items), err)
	}
}
