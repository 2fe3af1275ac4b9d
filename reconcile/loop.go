package reconcile

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
)

// Object is what a [Loop] reconciles: a Kubernetes object whose status
// carries conditions. Types that also implement
// [status.ObservedGenerationSetter] get status.observedGeneration
// maintained.
type Object interface {
	client.Object
	status.Setter
}

// State is the summary a reconciler's function reports for an object that
// it reconciled without error.
type State int

const (
	// Done: the object is as desired. Ready=True.
	Done State = iota
	// InProgress: the function did its part and waits for something (a
	// timer, a child object, an external system). Reconciling=True,
	// Ready=Unknown.
	InProgress
	// Failed: the object reached a final failed state that no retry
	// changes. Stalled=True, Ready=False.
	Failed
)

// Progress is a [State] with the reason and message that the summary
// conditions carry.
type Progress struct {
	State   State
	Reason  string
	Message string
}

// Loop is a [crreconcile.Reconciler] that runs the steps every reconciler of
// objects of type T needs, around the one step that is the user's own:
//
//  1. Fetch the object; gone means done, with no error.
//  2. Being deleted: run the [finalizer.Set] (cleanups in their fixed order,
//     each finalizer removed when its cleanup succeeded), and stop. A failed
//     cleanup is reported on the conditions with [ReasonCleanupFailed]
//     (Reconciling, or Stalled when permanent) and through the policy.
//  3. Ensure every finalizer of the Set is on the object (one patch, only
//     when one is missing).
//  4. Call Sync with the object. Sync reads and changes the object's
//     status freely; it returns the ctrl.Result and error it would return
//     from a hand-written Reconcile.
//  5. Set the kstatus summary conditions from the outcome, with
//     [status.MarkReady], [status.MarkReconciling] or [status.MarkStalled]:
//     a permanent error ([errors.Permanent], a reconcile.TerminalError, an
//     invalid object...) marks Stalled with the error's stable reason and
//     message; a transient or throttled error marks Reconciling; a conflict
//     or a canceled context leaves the conditions alone (the next attempt
//     decides); no error marks what Progress says (Done when Progress is
//     nil). status.observedGeneration is set with them.
//  6. Write the status subresource only if it changed ([status.Writer]):
//     an unchanged object costs no write at all.
//  7. Record an event when the summary changes (Normal, or Warning for
//     Stalled and for errors), never on a reconcile that changed nothing.
//  8. Return what [requeue.Policy] makes of Sync's result and error. A
//     failed status write is returned too; it never hides Sync's result
//     or error.
//
// The zero Loop is not usable: set Client and Sync. Everything else is
// optional. A Loop is safe for concurrent use by several workers; use it by
// pointer and do not copy it after first use.
type Loop[T Object] struct {
	// Client reads the object (usually the manager's cached client) and
	// writes finalizers and status. Required.
	Client client.Client
	// APIReader re-reads the object from the API server after a conflict
	// (usually the manager's GetAPIReader()). Defaults to Client.
	APIReader client.Reader
	// Sync is the reconciler's own logic. Required.
	Sync func(ctx context.Context, obj T) (ctrl.Result, error)
	// Progress maps an object that Sync handled without error to its summary
	// state. Nil means Done, with reason [status.ReasonSucceeded].
	Progress func(obj T) Progress
	// Finalizers run, in their order, when the object is deleted; the loop
	// keeps them on the object otherwise. Nil means no finalizers.
	Finalizers *finalizer.Set
	// Policy maps Sync's result and error to what controller-runtime gets.
	// Nil means a zero Policy of this Loop's own.
	Policy *requeue.Policy
	// Recorder records events on summary transitions. Nil records none.
	// Use the manager's GetEventRecorder(name).
	Recorder events.EventRecorder
	// FieldOwner is the field manager of the status writes.
	FieldOwner string
	// Clock stamps condition transitions. Nil means the real clock.
	Clock clock.PassiveClock

	// defaultPolicy is used when Policy is nil: one per Loop, as a Policy
	// keeps per-request state.
	defaultPolicy requeue.Policy
}

// ReasonCleanupFailed is the condition reason while a finalizer's cleanup
// fails: Reconciling when it will be retried, Stalled when it cannot
// succeed.
const ReasonCleanupFailed = "CleanupFailed"

// ErrInvalidLoop reports a Loop that lacks a required field.
var ErrInvalidLoop = errors.New("reconcile: invalid Loop")

// Validate reports a Loop that cannot run: no Client or no Sync.
func (l *Loop[T]) Validate() error {
	switch {
	case l == nil:
		return fmt.Errorf("%w: nil", ErrInvalidLoop)
	case l.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidLoop)
	case l.Sync == nil:
		return fmt.Errorf("%w: Sync is nil", ErrInvalidLoop)
	}
	return nil
}

// Reconcile runs the loop for one object. See [Loop].
func (l *Loop[T]) Reconcile(ctx context.Context, req crreconcile.Request) (ctrl.Result, error) {
	if err := l.Validate(); err != nil {
		return ctrl.Result{}, crreconcile.TerminalError(err)
	}
	policy := l.Policy
	if policy == nil {
		policy = &l.defaultPolicy
	}
	obj := newObject[T]()
	if err := l.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return policy.Result(ctx, req, ctrl.Result{}, fmt.Errorf("get %s: %w", req.NamespacedName, err))
	}

	var fopts []finalizer.Option
	if l.APIReader != nil {
		fopts = append(fopts, finalizer.WithAPIReader(l.APIReader))
	}
	var opts []status.Option
	if l.Clock != nil {
		opts = append(opts, status.WithClock(l.Clock))
	}
	writer := status.Writer{Client: l.Client, APIReader: l.APIReader, FieldOwner: l.FieldOwner}

	if !obj.GetDeletionTimestamp().IsZero() {
		if l.Finalizers == nil {
			return ctrl.Result{}, nil
		}
		snap := writer.Snapshot(obj)
		before := summarize(obj)
		_, err := l.Finalizers.Run(ctx, l.Client, obj, fopts...)
		if err == nil {
			return policy.Result(ctx, req, ctrl.Result{}, nil)
		}
		// A failed cleanup keeps its finalizer, so the object stays: say why
		// on its conditions, with one event per change, not one per retry.
		if class, _ := errors.Classify(err); class == errors.ClassPermanent {
			status.MarkStalled(obj, ReasonCleanupFailed, errors.Message(err), opts...)
		} else {
			status.MarkReconciling(obj, ReasonCleanupFailed, errors.Message(err), opts...)
		}
		return l.finish(ctx, req, policy, obj, snap, before, ctrl.Result{}, err)
	}
	if l.Finalizers != nil {
		if _, err := l.Finalizers.EnsureAll(ctx, l.Client, obj, fopts...); err != nil {
			if errors.Is(err, finalizer.ErrDeleting) {
				// Deletion began after our read: run the cleanups now.
				return requeue.After(0), nil
			}
			return policy.Result(ctx, req, ctrl.Result{}, err)
		}
	}

	snap := writer.Snapshot(obj)
	before := summarize(obj)

	res, err := l.Sync(ctx, obj)

	class, _ := errors.Classify(err)
	switch class {
	case errors.ClassNone:
		p := Progress{State: Done, Reason: status.ReasonSucceeded}
		if l.Progress != nil {
			p = l.Progress(obj)
		}
		switch p.State {
		case InProgress:
			status.MarkReconciling(obj, p.Reason, p.Message, opts...)
		case Failed:
			status.MarkStalled(obj, p.Reason, p.Message, opts...)
		default:
			status.MarkReady(obj, p.Reason, p.Message, opts...)
		}
	case errors.ClassPermanent:
		status.MarkStalled(obj, errors.Reason(err), errors.Message(err), opts...)
	case errors.ClassTransient, errors.ClassThrottled:
		status.MarkReconciling(obj, errors.Reason(err), errors.Message(err), opts...)
	default:
		// Conflict or Canceled: this attempt saw a stale object or is being
		// shut down; its status changes are not worth a write. The next
		// attempt decides.
		return policy.Result(ctx, req, res, err)
	}
	status.ObserveGeneration(obj)
	return l.finish(ctx, req, policy, obj, snap, before, res, err)
}

// finish writes the status if it changed, records an event if the summary
// changed, and maps res and err (and a failed write) through the policy.
func (l *Loop[T]) finish(ctx context.Context, req crreconcile.Request, policy *requeue.Policy, obj T,
	snap *status.Snapshot, before summary, res ctrl.Result, err error) (ctrl.Result, error) {
	if _, werr := snap.Write(ctx); werr != nil {
		log.FromContext(ctx).V(1).Info("status write failed", "error", werr)
		if err == nil {
			err = fmt.Errorf("write status: %w", werr)
		} else {
			err = errors.Join(err, fmt.Errorf("write status: %w", werr))
		}
		return policy.Result(ctx, req, res, err)
	}
	if after := summarize(obj); after != before {
		l.recordTransition(obj, after, err != nil)
	}
	return policy.Result(ctx, req, res, err)
}

// summary is the part of the kstatus conditions whose change is worth an
// event.
type summary struct {
	typ, reason, message string
}

func summarize(obj status.Getter) summary {
	for _, t := range []string{status.TypeStalled, status.TypeReconciling, status.TypeReady} {
		if c, ok := status.FindCondition(obj, t); ok && c.Status == metav1.ConditionTrue {
			return summary{typ: t, reason: c.Reason, message: c.Message}
		}
	}
	return summary{}
}

func (l *Loop[T]) recordTransition(obj T, s summary, failed bool) {
	eventType := corev1.EventTypeNormal
	if failed || s.typ == status.TypeStalled {
		eventType = corev1.EventTypeWarning
	}
	note := s.message
	if note == "" {
		note = s.typ
	}
	l.event(obj, eventType, s.reason, s.typ, note)
}

func (l *Loop[T]) event(obj T, eventType, reason, action, note string) {
	if l.Recorder == nil {
		return
	}
	if reason == "" {
		reason = action
	}
	l.Recorder.Eventf(obj, nil, eventType, reason, action, "%s", note)
}

func newObject[T Object]() T {
	var zero T
	t := reflect.TypeOf(zero)
	if t.Kind() == reflect.Pointer {
		return reflect.New(t.Elem()).Interface().(T)
	}
	return zero
}
