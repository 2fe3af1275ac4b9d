package request_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/request"
)

// A user annotates the object; the event filter lets the change through, the
// reconcile records the token in the status write that carries its outcome,
// and that write's own event is dropped: one reconcile per request.
func Example() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	requested := w.DeepCopy()
	requested.Annotations = map[string]string{request.Annotation: "2026-11-25T10:00:00Z"}
	p := request.Predicate()
	fmt.Println("reconcile:", p.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: requested}))

	fmt.Println("recorded:", request.MarkHandled(requested))
	handled := requested.DeepCopy() // what the status write returns
	fmt.Println("lastHandledReconcileAt:", handled.Status.LastHandledReconcileAt)
	fmt.Println("reconcile again:", p.Update(event.UpdateEvent{ObjectOld: requested, ObjectNew: handled}))
	fmt.Println("recorded again:", request.MarkHandled(handled))
	// Output:
	// reconcile: true
	// recorded: true
	// lastHandledReconcileAt: 2026-11-25T10:00:00Z
	// reconcile again: false
	// recorded again: false
}
