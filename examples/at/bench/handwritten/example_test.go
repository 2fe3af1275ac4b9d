package handwritten_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten"
)

// The hand-written reconciler adds its finalizer, skips the PENDING status
// of an At due within seconds, writes RUNNING with the Pod, then DONE and
// Ready, with one event, once the Pod has succeeded.
func ExampleReconciler() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = atv1.AddToScheme(scheme)
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := &atv1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello", UID: "0123456789", CreationTimestamp: metav1.NewTime(start)},
		Spec:       atv1.AtSpec{Schedule: "2026-11-22T10:00:05Z", Command: "echo hello"},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(at).WithStatusSubresource(at).Build()
	clock := clocktesting.NewFakePassiveClock(start)
	recorder := events.NewFakeRecorder(10)
	r := &handwritten.Reconciler{Client: c, Scheme: scheme, Clock: clock, Recorder: recorder}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(at)}

	step := func() {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		got := &atv1.At{}
		_ = c.Get(ctx, req.NamespacedName, got)
		ready := meta.FindStatusCondition(got.Status.Conditions, handwritten.TypeReady)
		readyStatus := metav1.ConditionStatus("-")
		if ready != nil {
			readyStatus = ready.Status
		}
		fmt.Printf("phase=%q ready=%s finalizers=%v requeueAfter=%s\n", got.Status.Phase, readyStatus, got.Finalizers, res.RequeueAfter)
	}
	step() // before the schedule: the finalizer, no status yet
	clock.SetTime(start.Add(5 * time.Second))
	step() // the schedule: the Pod and RUNNING

	pod := &corev1.Pod{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello-01234567"}, pod)
	pod.Status.Phase = corev1.PodSucceeded
	_ = c.Status().Update(ctx, pod)
	step() // the Pod succeeded: DONE and Ready
	fmt.Println(<-recorder.Events)
	// Output:
	// phase="" ready=- finalizers=[cnat.reconcilekit.dev/pod-cleanup] requeueAfter=5s
	// phase="RUNNING" ready=Unknown finalizers=[cnat.reconcilekit.dev/pod-cleanup] requeueAfter=0s
	// phase="DONE" ready=True finalizers=[cnat.reconcilekit.dev/pod-cleanup] requeueAfter=0s
	// Normal CommandSucceeded pod hello-01234567 ran the command successfully
}
