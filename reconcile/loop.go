package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
	"github.com/reconcilekit/reconcilekit/tracing"
	"github.com/reconcilekit/reconcilekit/track"
)

// Object is what a [Loop] reconciles: a Kubernetes object whose status
// carries conditions. Types that also implement
// [status.ObservedGenerationSetter] get status.observedGeneration
// maintained.
type Object interface {
	client.Object
	status.Setter
}

// State is how far along a reconciled object is, as its Sync reports it.
type State int

const (
	// Done: the object is as desired. Ready=True.
	Done State = iota
	// InProgress: Sync did its part and waits for something (a timer, a
	// child object, an external system). Reconciling=True, Ready=Unknown.
	InProgress
	// Failed: the object reached a final failed state that no retry
	// changes. Stalled=True, Ready=False.
	Failed
)

// Progress is what a [Loop]'s Sync reports for an object it reconciled
// without error: its [State] with the reason and message that the summary
// conditions carry, and when to run again. The zero Progress is Done, with
// reason [status.ReasonSucceeded] and no requeue.
type Progress struct {
	// State is how far along the object is.
	State State
	// Reason is the summary conditions' reason. Empty means the status
	// package's default for the state.
	Reason string
	// Message is the summary conditions' message.
	Message string
	// Requeue is when to reconcile again (requeue.At, requeue.After,
	// requeue.Every, ...). The zero Result waits for the next event.
	Requeue ctrl.Result
}

// Events says which summary transitions a [Loop] records as Kubernetes
// events. Every event is a write to the API server, so by default the loop
// records only those that tell a user something worth a notification.
type Events int

const (
	// EventsOnReadyAndWarnings records a Normal event when an object
	// becomes Ready and a Warning event when it becomes Stalled or when a
	// reported failure changes its summary. Moves into Reconciling, and
	// changes of an object that stays Ready (its reason or message: a
	// message that carries a replica count changes with every resize), are
	// recorded on the conditions only. A successful lifecycle costs one
	// event per object. It is the default.
	EventsOnReadyAndWarnings Events = iota
	// EventsOnTransitions records an event on every change of the summary:
	// Normal for Ready and Reconciling, Warning for Stalled and failures.
	EventsOnTransitions
	// EventsWarningsOnly records Warning events only.
	EventsWarningsOnly
)

// String returns the policy's name, "EventsOnReadyAndWarnings" for example.
func (e Events) String() string {
	switch e {
	case EventsOnReadyAndWarnings:
		return "EventsOnReadyAndWarnings"
	case EventsOnTransitions:
		return "EventsOnTransitions"
	case EventsWarningsOnly:
		return "EventsWarningsOnly"
	}
	return fmt.Sprintf("Events(%d)", int(e))
}

// Loop is a [crreconcile.Reconciler] that runs the steps every reconciler of
// objects of type T needs, around the one step that is the user's own:
//
//  1. Fetch the object; gone means done, with no error, and what the Loop
//     remembers of it is forgotten: what it read through References, its
//     failures in the Policy, and its events in a Recorder that forgets
//     (recorder.Recorder); and Gone is told.
//  2. Being deleted: run the [finalizer.Registry] (cleanups in their fixed
//     order, each finalizer removed when its cleanup succeeded), and stop.
//  3. Suspended by its users ([suspend.Requested]: the annotation
//     reconcilekit.io/suspend, or spec.suspend through [suspend.Getter]):
//     write the Suspended condition ([suspend.Mark]) when it is news, and
//     stop. No finalizer is added, Sync does not run, nothing is requeued.
//     (Deletion, step 2, comes first: a suspended object's finalizers run.)
//  4. Otherwise add every finalizer of the Registry that is missing (one
//     patch, only when one is missing), remove the Suspended condition of a
//     resumed object ([suspend.Clear]), then call Sync. Sync reads and
//     changes the object's status freely and returns its [Progress].
//  5. Classify the outcome ([requeue.Policy.DecideWith]): no
//     error sets the summary conditions from the Progress
//     ([status.MarkReady], [status.MarkReconciling], [status.MarkStalled]);
//     an error the decision reports (permanent at once, transient once it
//     has lasted Policy.ReportAfter) sets them with [status.MarkFailure]
//     (with [ReasonCleanupFailed] for a failed cleanup); a conflict or a
//     canceled context changes nothing (the attempt saw a stale object or
//     was cut short) and writes nothing; a transient error not yet
//     reported keeps the conditions but writes the rest of Sync's status
//     changes. status.observedGeneration is set whenever the conditions
//     were decided for the current generation, and then, for a type that
//     implements [request.Status], the token of a reconcile request
//     (package request) is recorded as handled ([request.MarkHandled]).
//  6. Write the status subresource only if it changed ([status.Writer]):
//     an unchanged object costs no write at all, and with
//     FirstStatusWithin a new object's first in-progress status waits for
//     the imminent reconcile that replaces it.
//  7. Record an event when a status write changed the summary, as Events
//     says; never on a reconcile that changed nothing, nor when the write
//     found the server already holding the same summary.
//  8. Return what the decision says. The decision is made once, after
//     the status write ([requeue.Policy.DecideWith]): a failed status write
//     joins Sync's error, so it is never lost, never hides Sync's error, and
//     costs no second decision (one backoff step, one Observe call). A
//     requeue Sync asked for counts from when Sync returned: the time the
//     status write took is taken off it, so requeue.At(t) runs again at t.
//
// Every read and write of the loop goes through a client guarded by
// [freshness]: a reconcile never acts on a cached copy of the object older
// than this process's last write of it (see the Freshness field).
//
// What it reads of a cached object: the whole object of type T (Sync gets
// it), not its managedFields; a part a diet.Fields transform keeps is
// refused with an error wrapping diet.ErrPartial, permanent. It reads the
// cache's own object without a copy (client.UnsafeDisableDeepCopy), which
// the status snapshot compares with and nothing changes, and gives Sync a
// deep copy: one copy per reconcile instead of two.
//
// Build a Loop with [New], which takes what every reconcile needs: the
// client, the operator's field owner and Sync; every other field is
// optional, set before first use. A Loop is safe for concurrent use by
// several workers; use it by pointer and do not copy it after first use.
// [Loop.Validate] runs once, on the first reconcile; call it while setting
// up to fail early.
//
// A Loop keeps no state of its own beyond its Policy (what it remembers of
// each request's failures) and Freshness (this process's writes); both,
// like References and the Recorder, forget an object once it is gone
// (docs/memory.md, "Bounds"). A
// reconciler whose struct others build, such as a kubebuilder test's
// &MemcachedReconciler{Client: c, Scheme: s}, can build its Loop on each
// call of its Reconcile method, with a requeue.Policy and a
// freshness.Tracker that live, zero-valued, in its struct: that costs a
// few allocations and no request (examples/kubebuilder in the module).
type Loop[T Object] struct {
	// APIReader re-reads the object from the API server after a conflict
	// (usually the manager's GetAPIReader()). Defaults to the client given
	// to [New].
	APIReader client.Reader
	// Finalizers run, in their order, when the object is deleted; the loop
	// keeps them on the object otherwise. Nil means no finalizers.
	Finalizers *finalizer.Registry[T]
	// Policy decides what an error means and what to return. Nil means a
	// zero Policy of this Loop's own, which tells the time by the Loop's
	// Clock. A Policy given here keeps its own Clock.
	Policy *requeue.Policy
	// Recorder records events on summary transitions. Nil records none.
	// Use the manager's GetEventRecorder(name).
	Recorder events.EventRecorder
	// Events says which transitions are recorded. The zero value is
	// [EventsOnReadyAndWarnings].
	Events Events
	// Mirror names condition types of the project's own that the loop keeps
	// in step with Ready and failures, such as kubebuilder's Available and
	// Degraded. The zero value keeps none.
	Mirror Mirror
	// Clock tells the Loop's time: it stamps condition transitions, dates
	// FirstStatusWithin, and is the Clock of the Loop's own Policy (for
	// ReportAfter) and of its own freshness Tracker (for its TTL), the
	// ones it makes when Policy or Freshness is nil. Nil means the real
	// clock.
	Clock clock.PassiveClock
	// FirstStatusWithin lets the first status of a new object wait for
	// the reconcile that makes it worth writing: when an object has no
	// summary condition yet, Sync reports InProgress without error, and its
	// Requeue comes before the object is FirstStatusWithin old, nothing is
	// written; the requeued reconcile writes the status it finds then (an
	// At created seconds before its schedule goes straight to RUNNING, as
	// a hand-written controller would, saving a write). Zero, the default,
	// writes every status change at once.
	FirstStatusWithin time.Duration
	// Freshness keeps the loop from acting on a cached copy of the object
	// older than its own writes (status, finalizers). Nil means a Tracker
	// of the loop's own, with the Loop's Clock and without informers: a
	// stale read is then retried
	// shortly (a quiet requeue) instead of waited for. Give a Tracker with
	// the manager's informers (Informers: mgr.GetCache()) to wait for the
	// cache instead, and guard Sync's own client with the same Tracker. A
	// client given to New that is already guarded (freshness.Tracker.Wrap, or
	// Tracker.NewClient in the manager's options) is used as it is.
	Freshness *freshness.Tracker
	// References is the track.Tracker Sync reads referenced objects
	// through (Secrets, ConfigMaps its object names), when it uses one: the
	// Loop forgets what an object read once the object is gone
	// ([track.Tracker.Forget]), so that memory follows the live objects.
	// Sync opens and closes its own record (References.For(key), then
	// Done). Nil: nothing to forget.
	References *track.Tracker
	// Tracer traces each reconcile (package tracing): a span carrying the
	// object and the decision, the parent of the spans of the reconcile's
	// writes and waits, in the trace of the object's current edit. Build
	// the manager from tracing.Config too, for the spans of the writes.
	// Nil, or a Tracer without a TracerProvider, traces nothing and costs
	// nothing.
	Tracer *tracing.Tracer

	// Gone is called with the key of the object when a reconcile finds it
	// gone (deleted, however and whenever it went, or no longer in the
	// cache), after References forgets it: give it what remembers
	// something per object outside the Loop, so that memory follows the
	// live objects, such as an applyset.Set's parents waiting for a kind
	// (loop.Gone = set.Forget, applyset.Set.Forget). Nil: nothing is told.
	Gone func(key types.NamespacedName)

	// base reads the object and writes finalizers and status: the client
	// given to New.
	base client.Client
	// syncFunc is the reconciler's own logic, given to New.
	syncFunc func(ctx context.Context, obj T) (Progress, error)
	// fieldOwner names the operator: the field manager of the loop's
	// status writes and finalizer patches, given to New.
	fieldOwner string
	// client is base, guarded; set once, with validation.
	client client.Client
	// defaultPolicy is used when Policy is nil: one per Loop, as a Policy
	// keeps per-request state.
	defaultPolicy requeue.Policy
	validateOnce  sync.Once
	invalid       error
}

// Mirror names condition types of a project's own that a [Loop] keeps in
// step with the kstatus conditions it writes, for projects whose users,
// tests or dashboards already read them: kubebuilder scaffolds Available and
// Degraded. The Loop sets them in the same status write as Ready, with the
// same rule for LastTransitionTime (it moves only when the status does).
// kstatus reads only Ready, Reconciling and Stalled, so mirrors change
// nothing for kubectl wait --for=condition=Ready, Flux or Argo CD, and
// kubectl wait --for=condition=Available works as well. The zero Mirror
// keeps none.
type Mirror struct {
	// Ready is the type of a condition that says what Ready says: the same
	// status, reason and message ("Available" in a kubebuilder project).
	Ready string
	// Failing is the type of a condition that is True, with the failure's
	// reason and message, while the object is Stalled or a reported failure
	// is on its conditions, and False, with Ready's reason, otherwise
	// ("Degraded" in a kubebuilder project).
	Failing string
}

// validate reports a mirror that would overwrite a kstatus condition or
// name one type twice.
func (m Mirror) validate() error {
	for _, t := range []string{m.Ready, m.Failing} {
		switch t {
		case status.TypeReady, status.TypeReconciling, status.TypeStalled:
			return fmt.Errorf("%w: Mirror names %s, a condition the loop writes itself", ErrInvalidLoop, t)
		}
	}
	if m.Ready != "" && m.Ready == m.Failing {
		return fmt.Errorf("%w: Mirror names %s for both Ready and Failing", ErrInvalidLoop, m.Ready)
	}
	return nil
}

// apply sets the mirrored conditions of obj from its Ready condition;
// failing says the outcome is a failure (Stalled, or a reported error).
func (m Mirror) apply(obj status.Setter, failing bool, opts ...status.Option) {
	if m == (Mirror{}) {
		return
	}
	ready, ok := status.FindCondition(obj, status.TypeReady)
	if !ok {
		return
	}
	if m.Ready != "" {
		status.SetCondition(obj, metav1.Condition{Type: m.Ready, Status: ready.Status, Reason: ready.Reason, Message: ready.Message}, opts...)
	}
	if m.Failing != "" {
		c := metav1.Condition{Type: m.Failing, Status: metav1.ConditionFalse, Reason: ready.Reason}
		if failing {
			c.Status, c.Message = metav1.ConditionTrue, ready.Message
		}
		status.SetCondition(obj, c, opts...)
	}
}

// A Loop is a controller-runtime reconciler: Complete(loop) takes it.
var _ crreconcile.Reconciler = (*Loop[Object])(nil)

// ReasonCleanupFailed is the condition reason while a finalizer's cleanup
// fails: Reconciling when it will be retried, Stalled when it cannot
// succeed.
const ReasonCleanupFailed = "CleanupFailed"

// ErrInvalidLoop reports a Loop that cannot run.
var ErrInvalidLoop = errors.New("reconcile: invalid Loop")

// New returns a Loop that reconciles objects of type T through c, under the
// field manager fieldOwner, around sync, the reconciler's own logic. c reads
// the object (usually the manager's cached client) and writes finalizers and
// status. fieldOwner is the operator's own name, the field manager of the
// Loop's status writes and finalizer patches: give Sync's own writes the
// same name (drift takes it where its writer is built), so that the API
// server records one field manager per operator, never a name another
// controller uses. Set the optional fields (APIReader, Finalizers, Policy,
// Recorder, ...) before the first reconcile.
//
// A Loop built with an empty fieldOwner, a nil c or a nil sync sends
// nothing: [Loop.Validate] says why, and every reconcile returns that
// error, classed permanent (an empty fieldOwner's wraps
// errors.ErrNoFieldOwner).
func New[T Object](c client.Client, fieldOwner string, sync func(ctx context.Context, obj T) (Progress, error)) *Loop[T] {
	return &Loop[T]{base: c, fieldOwner: fieldOwner, syncFunc: sync}
}

// Validate reports a Loop that cannot run: no client, no Sync, no field
// owner (the error also wraps errors.ErrNoFieldOwner), a Mirror that names
// Ready, Reconciling or Stalled (or one type twice), a Freshness Tracker
// that fails its own Validate, or a type T that is not a pointer to a
// struct (the loop makes a new T for every reconcile). The error wraps
// [ErrInvalidLoop]. The first reconcile calls it, and every reconcile of an
// invalid Loop returns its error, classed permanent (so also a
// controller-runtime terminal error), sending nothing.
func (l *Loop[T]) Validate() error {
	switch t := reflect.TypeFor[T](); {
	case l == nil:
		return fmt.Errorf("%w: nil", ErrInvalidLoop)
	case t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct:
		return fmt.Errorf("%w: object type %s is not a pointer to a struct", ErrInvalidLoop, t)
	case l.base == nil:
		return fmt.Errorf("%w: no client: build it with reconcile.New(c, fieldOwner, sync)", ErrInvalidLoop)
	case l.syncFunc == nil:
		return fmt.Errorf("%w: no Sync: build it with reconcile.New(c, fieldOwner, sync)", ErrInvalidLoop)
	case l.fieldOwner == "":
		return fmt.Errorf("%w: %w: build it with reconcile.New(c, fieldOwner, sync), fieldOwner the operator's own name, the field manager of its status writes and finalizer patches (give Sync's writes the same)", ErrInvalidLoop, errors.ErrNoFieldOwner)
	case l.Mirror.validate() != nil:
		return l.Mirror.validate()
	case l.Freshness != nil && l.Freshness.Validate() != nil:
		return fmt.Errorf("%w: Freshness: %w", ErrInvalidLoop, l.Freshness.Validate())
	}
	return nil
}

// Reconcile runs the loop for one object. See [Loop].
func (l *Loop[T]) Reconcile(ctx context.Context, req crreconcile.Request) (ctrl.Result, error) {
	if l == nil {
		return ctrl.Result{}, errors.Permanent(l.Validate())
	}
	l.validateOnce.Do(func() {
		if err := l.Validate(); err != nil {
			l.invalid = errors.Permanent(err)
			return
		}
		// What the Loop builds tells the time by its Clock.
		l.defaultPolicy.Clock = l.Clock
		l.client = l.base
		if freshness.TrackerOf(l.base) == nil {
			tracker := l.Freshness
			if tracker == nil {
				tracker = &freshness.Tracker{Clock: l.Clock}
			}
			l.client = tracker.Wrap(l.base)
		}
	})
	if l.invalid != nil {
		return ctrl.Result{}, l.invalid
	}
	if l.Tracer.Enabled() {
		return l.reconcileTraced(ctx, req)
	}
	obj, read, err := l.fetch(ctx, req)
	return l.reconcile(ctx, req, obj, read, err)
}

// reconcile runs the loop for one object, fetched (obj, read) or not (err).
func (l *Loop[T]) reconcile(ctx context.Context, req crreconcile.Request, obj T, read client.Object, err error) (ctrl.Result, error) {
	policy := l.Policy
	if policy == nil {
		policy = &l.defaultPolicy
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			l.forget(policy, req)
			return ctrl.Result{}, nil
		}
		return policy.Decide(ctx, req, ctrl.Result{}, fmt.Errorf("get %s: %w", req.NamespacedName, err)).Return()
	}

	writer := status.NewWriter(l.client, l.fieldOwner)
	writer.APIReader = l.APIReader
	r := run[T]{l: l, policy: policy, req: req, obj: obj}

	if !obj.GetDeletionTimestamp().IsZero() {
		if l.Finalizers == nil {
			return ctrl.Result{}, nil
		}
		r.begin(writer, read)
		_, err := l.Finalizers.Finalize(tracing.Operation(ctx, "finalizer.Registry.Finalize"), l.finalizerWriter(), obj)
		// A failed cleanup keeps its finalizer, so the object stays: say
		// why on its conditions, once, not on every retry.
		return r.finish(ctx, Progress{}, errors.WithReason(err, ReasonCleanupFailed), false)
	}
	if why, ok := suspend.Requested(obj); ok {
		return r.suspended(ctx, writer, read, why)
	}
	if l.Finalizers != nil {
		added, err := l.Finalizers.AddMissing(tracing.Operation(ctx, "finalizer.Registry.AddMissing"), l.finalizerWriter(), obj)
		if added || obj.GetResourceVersion() != read.GetResourceVersion() {
			// obj is now the server's answer to the patch, or what a
			// retry after a conflict read: newer than read.
			read = nil
		}
		if err != nil {
			if errors.Is(err, finalizer.ErrDeleting) {
				// Deletion began after our read: run the cleanups now.
				return policy.Decide(ctx, req, requeue.After(0), nil).Return()
			}
			return policy.Decide(ctx, req, ctrl.Result{}, err).Return()
		}
	}
	r.begin(writer, read)
	r.resume()
	p, err := l.syncFunc(ctx, obj)
	return r.finish(ctx, p, err, true)
}

// forgetter is a Recorder that forgets the events of a gone object
// (recorder.Recorder).
type forgetter interface {
	Forget(types.NamespacedName)
}

// forget drops what the Loop's parts remember of a gone object: what it
// read (References), its failures (the Policy) and its events (a Recorder
// that forgets, such as a recorder.Recorder), so that memory follows the
// objects that exist, whenever and however the object went.
func (l *Loop[T]) forget(policy *requeue.Policy, req crreconcile.Request) {
	l.References.Forget(req.NamespacedName)
	policy.Forget(req)
	if f, ok := l.Recorder.(forgetter); ok {
		f.Forget(req.NamespacedName)
	}
	if l.Gone != nil {
		l.Gone(req.NamespacedName)
	}
}

// fetch reads the request's object. It reads the cache's own object
// (client.UnsafeDisableDeepCopy), keeps it, unchanged, as what the status
// snapshot compares with (read), and returns a deep copy of it to change
// (obj), with its kind set as a cached read sets it: one deep copy per
// reconcile instead of two. An object a cache keeps in part (diet.Fields)
// is refused: Sync would act on what the cache left out.
func (l *Loop[T]) fetch(ctx context.Context, req crreconcile.Request) (obj T, read client.Object, err error) {
	cached := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	if err := l.client.Get(ctx, req.NamespacedName, cached, client.UnsafeDisableDeepCopy); err != nil {
		return obj, nil, err
	}
	if diet.IsPartial(cached) {
		return obj, nil, errors.Permanent(fmt.Errorf("%w: a Loop reconciles whole objects, never the part of one a diet.Fields transform keeps", diet.ErrPartial))
	}
	obj = cached.DeepCopyObject().(T)
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		if gvk, err := l.client.GroupVersionKindFor(obj); err == nil {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	return obj, cached, nil
}

// finalizerWriter is the writer of the Loop's finalizer patches.
func (l *Loop[T]) finalizerWriter() *finalizer.Writer {
	w := finalizer.NewWriter(l.client, l.fieldOwner)
	w.APIReader = l.APIReader
	return w
}

// run is one reconcile of one object.
type run[T Object] struct {
	l      *Loop[T]
	policy *requeue.Policy
	req    crreconcile.Request
	obj    T
	snap   *status.Snapshot
	before summary
	// resumed: this reconcile removed the mark of a suspension.
	resumed bool
}

// begin records the object as read, before anything changes it.
func (r *run[T]) begin(w *status.Writer, read client.Object) {
	r.snap = w.SnapshotFrom(r.obj, read)
	r.before = summarize(r.obj)
}

// finish decides once what the outcome of a sync (or, with synced false, of
// the cleanups) means: it sets the conditions, writes the status if it
// changed and records an event if the write changed the summary, all before
// the decision is final, so that a failed status write joins the decision
// instead of being decided a second time.
//
// A requeue Sync asked for counts from when Sync returned: the time the
// status write and the event took is taken off it, so that a Sync that
// returns requeue.At(t) runs again at t, not at t plus the write's latency.
func (r *run[T]) finish(ctx context.Context, p Progress, err error, synced bool) (ctrl.Result, error) {
	var clk clock.PassiveClock = clock.RealClock{}
	if r.l.Clock != nil {
		clk = r.l.Clock
	}
	decided := clk.Now()
	d := r.policy.DecideWith(ctx, r.req, p.Requeue, err, func(d requeue.Decision) error {
		return r.record(ctx, d, p, synced)
	})
	recordDecision(ctx, d, p, synced)
	res, rerr := d.Return()
	if rerr == nil && d.Class == errors.ClassNone && res == p.Requeue && res.RequeueAfter > 0 {
		res.RequeueAfter = max(res.RequeueAfter-clk.Since(decided), requeue.MinDelay)
	}
	return res, rerr
}

// record writes down the outcome d of a reconcile: the conditions from the
// Progress or the error, the status if it changed, an event if the write
// changed the summary. It returns the status write's error.
func (r *run[T]) record(ctx context.Context, d requeue.Decision, p Progress, synced bool) error {
	opts := r.l.conditionOptions()
	err := d.Err
	switch {
	case err == nil && synced && r.before == (summary{}) && !r.resumed && r.l.deferFirstStatus(r.obj, p):
		// The next reconcile, moments away, writes the status.
		return nil
	case err == nil && synced:
		switch p.State {
		case InProgress:
			status.MarkReconciling(r.obj, p.Reason, p.Message, opts...)
		case Failed:
			status.MarkStalled(r.obj, p.Reason, p.Message, opts...)
		default:
			status.MarkReady(r.obj, p.Reason, p.Message, opts...)
		}
		r.l.Mirror.apply(r.obj, p.State == Failed, opts...)
		observeGeneration(r.obj)
		r.handleRequest(ctx)
	case err == nil:
		// Every cleanup succeeded: the object is on its way out.
		return nil
	case d.Report:
		status.MarkFailure(r.obj, err, d.Class, opts...)
		r.l.Mirror.apply(r.obj, true, opts...)
		observeGeneration(r.obj)
		if synced {
			r.handleRequest(ctx)
		}
	case d.Class == errors.ClassConflict || d.Class == errors.ClassCanceled:
		// This attempt saw a stale object or is being shut down: its
		// status is not worth a write. The next attempt decides.
		return nil
	}
	written, werr := r.snap.Write(tracing.Operation(ctx, "status.Snapshot.Write"))
	if werr != nil {
		log.FromContext(ctx).V(1).Info("status write failed", "error", werr)
		return fmt.Errorf("write status: %w", werr)
	}
	if after := summarize(r.obj); written && after != r.before {
		r.l.recordTransition(ctx, r.obj, r.before, after, err != nil)
	}
	return nil
}

// observeGeneration brings obj's status.observedGeneration up to date
// when its type has one (status.ObservedGenerationSetter); the Loop's T
// need not.
func observeGeneration(obj client.Object) {
	if o, ok := obj.(status.ObservedGenerationObject); ok {
		status.ObserveGeneration(o)
	}
}

// deferFirstStatus reports whether the status of obj, read without a
// summary, may wait for the requeue p asks for (see Loop.FirstStatusWithin).
func (l *Loop[T]) deferFirstStatus(obj T, p Progress) bool {
	if l.FirstStatusWithin <= 0 || p.State != InProgress || p.Requeue.RequeueAfter <= 0 {
		return false
	}
	created := obj.GetCreationTimestamp()
	if created.IsZero() {
		return false
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if l.Clock != nil {
		clk = l.Clock
	}
	// The object is new by this clock (a clock behind the API server's
	// never makes an old object look new for long), and the next reconcile
	// comes before it is FirstStatusWithin old.
	age := clk.Now().Sub(created.Time)
	// (Compared without adding: a requeue years away saturates Duration.)
	return age >= 0 && age < l.FirstStatusWithin && p.Requeue.RequeueAfter < l.FirstStatusWithin-age
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

// recordTransition records the event of a change of the summary from
// before to s, if l.Events asks for one.
func (l *Loop[T]) recordTransition(ctx context.Context, obj T, before, s summary, failed bool) {
	if l.Recorder == nil || s.typ == "" {
		return
	}
	warning := failed || s.typ == status.TypeStalled
	switch {
	case warning:
	case l.Events == EventsWarningsOnly:
		return
	case l.Events == EventsOnReadyAndWarnings && (s.typ != status.TypeReady || before.typ == status.TypeReady):
		return
	}
	eventType := corev1.EventTypeNormal
	if warning {
		eventType = corev1.EventTypeWarning
	}
	note, reason := s.message, s.reason
	if note == "" {
		note = s.typ
	}
	if reason == "" {
		reason = s.typ
	}
	if a, ok := annotatedRecorder(ctx, l.Recorder); ok {
		// The event carries the reconcile's trace context: its write is
		// a span of this reconcile's trace (package recorder).
		a.AnnotatedEventf(obj, nil, traceAnnotations(ctx), eventType, reason, s.typ, "%s", note)
	} else {
		l.Recorder.Eventf(obj, nil, eventType, reason, s.typ, "%s", note)
	}
	eventsTotal.WithLabelValues(eventType).Inc()
}
