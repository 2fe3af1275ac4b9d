package requeue_test

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/requeue"
)

func ExampleAt() {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))

	schedule := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	fmt.Println(requeue.At(schedule, requeue.WithClock(clk)).RequeueAfter)

	// A time already past requeues at once, never "no requeue".
	fmt.Println(requeue.At(schedule.Add(-time.Hour), requeue.WithClock(clk)).RequeueAfter)
	// Output:
	// 30m0s
	// 1ns
}

func ExampleMerge() {
	res := requeue.Merge(
		requeue.Every(10*time.Minute, 0), // periodic resync
		ctrl.Result{},                    // a step with nothing to wait for
		requeue.After(45*time.Second),    // a certificate to renew soon
	)
	fmt.Println(res.RequeueAfter)
	// Output:
	// 45s
}

func ExampleEvery() {
	res := requeue.Every(10*time.Minute, time.Minute)
	fmt.Println(res.RequeueAfter >= 9*time.Minute && res.RequeueAfter <= 11*time.Minute)
	// Output:
	// true
}

func ExamplePolicy() {
	var p requeue.Policy // the zero value is ready to use
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "demo"}}
	pods := schema.GroupResource{Resource: "pods"}

	// What the reconcile returned: a periodic resync of 1h and an error.
	for _, err := range []error{
		nil,
		apierrors.NewConflict(pods, "demo-0", errors.New("the object has been modified")),
		apierrors.NewTooManyRequests("slow down", 2),
		errors.RetryAfter(errors.New("database not ready"), 20*time.Second),
		errors.Permanent(errors.New("spec.schedule is not a time")),
		errors.New("connection flapped"),
	} {
		res, err := p.Result(ctx, req, ctrl.Result{RequeueAfter: time.Hour}, err)
		fmt.Printf("requeueAfter=%v terminal=%v err=%v\n", res.RequeueAfter, errors.Is(err, reconcile.TerminalError(nil)), err)
	}
	// Output:
	// requeueAfter=1h0m0s terminal=false err=<nil>
	// requeueAfter=100ms terminal=false err=<nil>
	// requeueAfter=2s terminal=false err=<nil>
	// requeueAfter=20s terminal=false err=<nil>
	// requeueAfter=0s terminal=true err=spec.schedule is not a time
	// requeueAfter=0s terminal=false err=connection flapped
}

// Decide is Result with the decision kept: set the conditions from it, then
// return what it says. A transient failure is reported only once it has
// lasted ReportAfter; a permanent one at once.
func ExamplePolicy_Decide() {
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	p := requeue.Policy{ReportAfter: 30 * time.Second, Clock: clk, Observe: func(context.Context, requeue.Decision) {}}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "demo"}}

	for _, step := range []struct {
		after time.Duration
		err   error
	}{
		{0, errors.New("database not reachable")},
		{10 * time.Second, errors.New("database not reachable")},
		{40 * time.Second, errors.New("database not reachable")},
		{50 * time.Second, errors.Permanent(errors.New("spec.size is negative"))},
	} {
		clk.SetTime(start.Add(step.after))
		d := p.Decide(ctx, req, ctrl.Result{}, step.err)
		_, err := d.Return()
		fmt.Printf("t=%-3v class=%-9v report=%-5v terminal=%v\n", step.after, d.Class, d.Report, errors.Is(err, reconcile.TerminalError(nil)))
	}
	// Output:
	// t=0s  class=transient report=false terminal=false
	// t=10s class=transient report=false terminal=false
	// t=40s class=transient report=true  terminal=false
	// t=50s class=permanent report=true  terminal=true
}

// DecideWith is Decide for a reconcile that records its outcome in status:
// the record function sets the conditions from the decision and writes
// them, and a failed write joins the decision before it is final. Here the
// reconcile succeeded, but its status write was throttled: the one decision
// says so, and waits the delay the server asked for.
func ExamplePolicy_DecideWith() {
	p := requeue.Policy{Observe: func(_ context.Context, d requeue.Decision) {
		fmt.Printf("observed once: class=%v err=%q\n", d.Class, d.Err)
	}}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "demo"}}
	d := p.DecideWith(context.Background(), req, ctrl.Result{}, nil, func(d requeue.Decision) error {
		fmt.Printf("recording: class=%v report=%v\n", d.Class, d.Report)
		// status.MarkReady(obj, ...); _, err := snapshot.Write(ctx); return err
		return errors.RetryAfter(errors.New("write status: too many requests"), 3*time.Second)
	})
	res, err := d.Return()
	fmt.Println(res.RequeueAfter, err)
	// Output:
	// recording: class=none report=false
	// observed once: class=throttled err="write status: too many requests"
	// 3s <nil>
}

// A Policy set wrong says so: Validate names every field, and the Policy
// checks itself on first use, failing the reconcile for good (on the
// object's conditions, with reason InvalidPolicy) instead of waiting delays
// nobody asked for.
func ExamplePolicy_Validate() {
	p := &requeue.Policy{
		ConflictDelay: time.Minute,                  // above the default cap, MaxConflictDelay (30s)
		Backoff:       &requeue.Backoff{Jitter: 20}, // a fraction: 0.2 was meant
		Observe:       func(context.Context, requeue.Decision) {},
	}
	fmt.Println(p.Validate())

	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}
	d := p.Decide(context.Background(), req, reconcile.Result{}, nil)
	fmt.Println(d.Class, errors.Reason(d.Err), errors.Is(d.Returned, requeue.ErrInvalidPolicy))
	// Output:
	// requeue: invalid Policy: MaxConflictDelay (30s, the default) is below ConflictDelay (1m0s): every conflict would wait 30s
	// requeue: invalid Policy: Backoff.Jitter is 20: it is the fraction of a delay removed at random, at most 1 (0 means the default, 0.2; negative disables it)
	// permanent InvalidPolicy true
}
