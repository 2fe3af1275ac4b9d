package classic_test

import (
	"context"
	"fmt"
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
)

// The classic reconciler takes one reconcile per phase change: PENDING,
// then RUNNING (written with Status().Update), then the Pod, then DONE once
// the Pod has succeeded.
func ExampleReconciler() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = atv1.AddToScheme(scheme)
	at := &atv1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello", UID: "1"},
		Spec:       atv1.AtSpec{Schedule: "2026-11-22T10:00:05Z", Command: "echo hello"},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(at).WithStatusSubresource(at).Build()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	r := &classic.Reconciler{Client: c, Scheme: scheme, Clock: clock}
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
		fmt.Printf("phase=%s requeueAfter=%s\n", got.Status.Phase, res.RequeueAfter)
	}
	step() // before the schedule
	clock.SetTime(clock.Now().Add(5 * time.Second))
	step() // the schedule: RUNNING
	step() // creates the Pod

	pod := &corev1.Pod{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello-pod"}, pod)
	pod.Status.Phase = corev1.PodSucceeded
	_ = c.Status().Update(ctx, pod)
	step() // the Pod succeeded: DONE
	// Output:
	// phase=PENDING requeueAfter=5s
	// phase=RUNNING requeueAfter=0s
	// phase=RUNNING requeueAfter=0s
	// phase=DONE requeueAfter=0s
}
