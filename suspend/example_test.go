package suspend_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// A reconciler of its own honours a suspension: while suspended it marks the
// object and stops; once resumed it clears the mark and reconciles.
func Example() {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1,
		Annotations: map[string]string{suspend.Annotation: "true"}}}
	status.MarkReady(w, "Deployed", "the deployment is up to date")

	reconcile := func() {
		if why, ok := suspend.Requested(w); ok {
			fmt.Println("mark changed:", suspend.Mark(w, why))
			return
		}
		fmt.Println("clear changed:", suspend.Clear(w))
	}
	reconcile()
	reconcile() // a resync of the suspended object: nothing to write
	for _, c := range w.Status.Conditions {
		fmt.Printf("%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}

	delete(w.Annotations, suspend.Annotation) // kubectl annotate widget/w reconcilekit.io/suspend-
	reconcile()
	fmt.Println("suspended:", status.IsTrue(w, suspend.TypeSuspended), "ready:", status.IsTrue(w, status.TypeReady))
	// Output:
	// mark changed: true
	// mark changed: false
	// Ready=True Deployed: the deployment is up to date
	// Suspended=True Suspended: annotation reconcilekit.io/suspend is "true"
	// clear changed: true
	// suspended: false ready: true
}
