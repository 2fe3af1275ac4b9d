package errors_test

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

func ExampleClassify() {
	pods := schema.GroupResource{Resource: "pods"}
	for _, err := range []error{
		nil,
		fmt.Errorf("update pod: %w", apierrors.NewConflict(pods, "web-0", errors.New("the object has been modified"))),
		apierrors.NewTooManyRequests("slow down", 5),
		apierrors.NewBadRequest("spec.schedule: not a time"),
		errors.New("something nobody recognises"),
		errors.RetryAfter(errors.New("waiting for the database"), 30*time.Second),
	} {
		class, delay := errors.Classify(err)
		fmt.Printf("%-9s %-4v %q\n", class, delay, errors.Reason(err))
	}
	// Output:
	// none      0s   ""
	// conflict  0s   "Conflict"
	// throttled 5s   "TooManyRequests"
	// permanent 0s   "BadRequest"
	// transient 0s   "TransientError"
	// throttled 30s  "RetryAfter"
}

func ExamplePermanent() {
	cause := errors.New(`schedule "tomorrow" is not an RFC 3339 time`)
	err := fmt.Errorf("reconcile at/demo: %w", errors.Permanent(cause))

	class, _ := errors.Classify(err)
	fmt.Println(class)
	fmt.Println(errors.Is(err, cause))                        // the cause stays visible
	fmt.Println(errors.Is(err, reconcile.TerminalError(nil))) // controller-runtime will not retry
	fmt.Println(err)                                          // the text is unchanged
	// Output:
	// permanent
	// true
	// true
	// reconcile at/demo: schedule "tomorrow" is not an RFC 3339 time
}

func ExampleIsTerminal() {
	cause := errors.New("spec.image is empty")
	for _, err := range []error{
		errors.Permanent(cause),
		reconcile.TerminalError(cause),
		fmt.Errorf("sync: %w", errors.Permanent(cause)),
		errors.Transient(reconcile.TerminalError(cause)),
		errors.Transient(cause),
		nil,
	} {
		class, _ := errors.Classify(err)
		fmt.Printf("terminal=%-5v class=%-9s %v\n", errors.IsTerminal(err), class, err)
	}
	// Output:
	// terminal=true  class=permanent spec.image is empty
	// terminal=true  class=permanent terminal error: spec.image is empty
	// terminal=true  class=permanent sync: spec.image is empty
	// terminal=true  class=transient terminal error: spec.image is empty
	// terminal=false class=transient spec.image is empty
	// terminal=false class=none      <nil>
}

func ExampleMessage() {
	err := errors.New(`Precondition failed: UID in precondition: 0b6e2a3c-1f0e-4c1e-9a3b-2f8c1d4e5a6b, resourceVersion=48213`)
	fmt.Println(errors.Message(err))
	// Output:
	// Precondition failed: UID in precondition: <uid>, resourceVersion=<rv>
}

func ExampleJoin() {
	pods := schema.GroupResource{Resource: "pods"}
	err := errors.Join(
		errors.Permanent(errors.New("bad port")),
		apierrors.NewConflict(pods, "web-0", errors.New("modified")),
	)
	class, _ := errors.Classify(err)
	fmt.Println(class) // permanent only when every part is permanent
	// Output:
	// conflict
}

// A reconciler names its own failures: the condition and the event say
// InvalidSpec, not PermanentError.
func ExampleWithReason() {
	err := errors.Permanent(errors.WithReason(
		errors.New(`spec.schedule "tomorrow" is not an RFC 3339 time`), "InvalidSpec"))
	class, _ := errors.Classify(err)
	fmt.Println(class, errors.Reason(err))
	// Output:
	// permanent InvalidSpec
}
