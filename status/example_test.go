package status_test

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

func ExampleSetCondition() {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 10, 0, 0, 500_000_000, time.UTC))
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Generation: 3}}

	changed := status.SetCondition(w, metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "Starting"}, status.WithClock(clk))
	fmt.Println("first set changed:", changed)

	// A new reason alone keeps the transition time; the same condition
	// again changes nothing.
	clk.SetTime(clk.Now().Add(time.Minute))
	fmt.Println("new reason changed:", status.SetCondition(w, metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "Pulling"}, status.WithClock(clk)))
	fmt.Println("same again changed:", status.SetCondition(w, metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "Pulling"}, status.WithClock(clk)))

	c, _ := status.FindCondition(w, "Available")
	fmt.Println(c.Status, c.Reason, c.ObservedGeneration, c.LastTransitionTime.UTC().Format(time.RFC3339Nano))
	// Output:
	// first set changed: true
	// new reason changed: true
	// same again changed: false
	// False Pulling 3 2026-11-22T10:00:00Z
}

func ExampleMarkReady() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	status.MarkReconciling(w, "Scaling", "1 of 3 replicas")
	status.ObserveGeneration(w) // the Mark helpers set conditions only
	show := func() {
		for _, c := range w.Status.Conditions {
			fmt.Printf("%s=%s(%s) ", c.Type, c.Status, c.Reason)
		}
		fmt.Println("observedGeneration:", w.Status.ObservedGeneration)
	}
	show()
	status.MarkReady(w, "Reconciled", "3 of 3 replicas")
	show()
	status.MarkStalled(w, "InvalidSpec", "replicas must not be negative")
	show()
	// Output:
	// Reconciling=True(Scaling) Ready=Unknown(Scaling) observedGeneration: 2
	// Ready=True(Reconciled) observedGeneration: 2
	// Ready=False(InvalidSpec) Stalled=True(InvalidSpec) observedGeneration: 2
}

func ExampleWriter_Patch() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = testapi.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&testapi.Widget{}).
		WithObjects(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w", Generation: 1}}).Build()

	w := status.NewWriter(c, "widget-controller")
	for pass := 1; pass <= 2; pass++ {
		obj := &testapi.Widget{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "w"}, obj)
		written, err := w.Patch(ctx, obj, func() error {
			status.MarkReady(obj, "Reconciled", "")
			return nil
		})
		fmt.Printf("pass %d: written=%v err=%v\n", pass, written, err)
	}
	// Output:
	// pass 1: written=true err=<nil>
	// pass 2: written=false err=<nil>
}

func ExampleFromError() {
	// The same failure on two retries, with a different request ID and
	// time each time.
	first := errors.New("backend: request id 7f3a9 failed at 2026-11-22T10:00:01Z")
	second := errors.New("backend: request id c01d2 failed at 2026-11-22T10:00:31Z")

	w := &testapi.Widget{}
	fmt.Println("first changed:", status.SetCondition(w, status.FromError("Synced", first)))
	fmt.Println("retry changed:", status.SetCondition(w, status.FromError("Synced", second)))
	c, _ := status.FindCondition(w, "Synced")
	fmt.Printf("%s %s: %s\n", c.Status, c.Reason, c.Message)
	// Output:
	// first changed: true
	// retry changed: false
	// False TransientError: backend: request id <id> failed at <time>
}

// MarkFailure is the error-to-conditions step: a permanent error stalls the
// object, a transient one marks it reconciling, a conflict changes nothing.
// The class comes from the one classification of the reconcile
// (requeue.Policy.Decide, or errors.Classify).
func ExampleMarkFailure() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	for _, err := range []error{
		errors.New("connection refused"),
		errors.Permanent(errors.WithReason(errors.New("spec.size must be positive"), "InvalidSpec")),
		apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("modified")),
	} {
		class, _ := errors.Classify(err)
		changed := status.MarkFailure(w, err, class)
		ready, _ := status.FindCondition(w, status.TypeReady)
		fmt.Printf("%-9v changed=%-5v Ready=%s %s: %s\n", class, changed, ready.Status, ready.Reason, ready.Message)
	}
	// Output:
	// transient changed=true  Ready=Unknown TransientError: connection refused
	// permanent changed=true  Ready=False InvalidSpec: spec.size must be positive
	// conflict  changed=false Ready=False InvalidSpec: spec.size must be positive
}
