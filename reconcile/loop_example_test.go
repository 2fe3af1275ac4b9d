package reconcile_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/status"
)

// A Loop is a whole reconciler: Sync holds only the business logic. The
// loop adds the finalizer, sets Ready or Stalled with observedGeneration,
// writes status only when it changed, and maps errors to requeues.
func ExampleLoop() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = testapi.AddToScheme(scheme)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w", Generation: 1},
		Spec: testapi.WidgetSpec{Message: "hello"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).WithStatusSubresource(w).Build()

	cleanup := &finalizer.Set{}
	_ = cleanup.Register("example.com/cleanup", finalizer.Func(func(context.Context, client.Object) error { return nil }))
	loop := &reconcile.Loop[*testapi.Widget]{
		Client:     c,
		Finalizers: cleanup,
		Sync: func(ctx context.Context, w *testapi.Widget) (ctrl.Result, error) {
			if w.Spec.Message == "" {
				return ctrl.Result{}, errors.Permanent(errors.New("spec.message is empty"))
			}
			w.Status.Phase = "Said " + w.Spec.Message
			return ctrl.Result{}, nil
		},
	}
	// In a real controller:
	//   ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}).Complete(loop)
	req := crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	res, err := loop.Reconcile(ctx, req)
	fmt.Println("result:", res, "error:", err)

	got := &testapi.Widget{}
	_ = c.Get(ctx, req.NamespacedName, got)
	ready, _ := status.Get(got, status.TypeReady)
	fmt.Println("finalizers:", got.Finalizers)
	fmt.Println("phase:", got.Status.Phase)
	fmt.Println("Ready:", ready.Status, "observedGeneration:", got.Status.ObservedGeneration)

	got.Spec.Message = ""
	_ = c.Update(ctx, got)
	_, err = loop.Reconcile(ctx, req)
	_ = c.Get(ctx, req.NamespacedName, got)
	stalled, _ := status.Get(got, status.TypeStalled)
	fmt.Println("terminal:", errors.Is(err, crreconcile.TerminalError(nil)))
	fmt.Println("Stalled:", stalled.Status, stalled.Message)
	// Output:
	// result: {false 0s <nil>} error: <nil>
	// finalizers: [example.com/cleanup]
	// phase: Said hello
	// Ready: True observedGeneration: 1
	// terminal: true
	// Stalled: True spec.message is empty
}
