// Package controller is the At operator's reconciler. It is written only
// with reconcilekit's public packages, the way an operator author would:
//
//   - reconcile.Loop runs the fetch / finalizer / status / requeue steps;
//     this file only says what an At means and how far along it is (sync).
//   - requeue.At waits for the schedule: no polling, no sleeping.
//   - a drift.Writer's Ensure creates the one Pod, owned by the At, and
//     writes nothing when it already exists.
//   - errors.Permanent turns a schedule that cannot be parsed into a
//     Stalled condition and one Warning event instead of a retry loop.
//   - finalizer deletes a running Pod when its At is deleted.
//   - freshness keeps every read (the At, its Pod) at least as new as this
//     process's last write, so a reconcile never acts on a stale copy.
//   - recorder sends the At's events as client-go's broadcaster would,
//     keeping a few words of each instead of a copy.
//   - spec.suspend (package suspend) and reconcile.fluxcd.io/requestedAt
//     (package request) are the users' controls, which the Loop honours.
package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/recorder"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
	"github.com/reconcilekit/reconcilekit/suspend"
)

// An At is suspended by its spec.suspend (or by the annotation
// reconcilekit.io/suspend, as any object of a reconcile.Loop), and records the
// reconcile requests it handled in status.lastHandledReconcileAt: the Loop
// does both for types that implement these interfaces.
var (
	_ suspend.Getter = (*atv1.At)(nil)
	_ request.Status = (*atv1.At)(nil)
)

// Name is the controller's name: its field manager and event source.
const Name = "at-controller"

// AtUIDLabel labels an At's Pod with the At's UID.
const AtUIDLabel = "cnat.reconcilekit.dev/at-uid"

// PodCleanupFinalizer deletes an At's Pod before the At goes away.
const PodCleanupFinalizer = "cnat.reconcilekit.dev/pod-cleanup"

// Reasons of the At's summary conditions and events.
const (
	ReasonScheduled        = "Scheduled"
	ReasonPodRunning       = "PodRunning"
	ReasonCommandSucceeded = "CommandSucceeded"
	ReasonCommandFailed    = "CommandFailed"
	ReasonPodDeleted       = "PodDeleted"
	ReasonInvalidSchedule  = "InvalidSchedule"
)

// AtReconciler holds what the At logic needs. Build it with [New].
type AtReconciler struct {
	client    client.Client
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	clock     clock.PassiveClock
	shard     *shard.Member
}

// Options wires the At reconciler. [SetupWithManager] fills the zero fields
// from the manager; [New] needs at least Client and Scheme.
type Options struct {
	// Client reads (usually from the cache) and writes. Required.
	Client client.Client
	// APIReader reads straight from the API server. Defaults to Client.
	APIReader client.Reader
	// Scheme knows the At and Pod types. Required.
	Scheme *runtime.Scheme
	// Recorder records events. Nil records none; [SetupWithManager] makes
	// one (package recorder) and adds it to the manager.
	Recorder events.EventRecorder
	// Clock decides when a schedule is due. Nil means the real clock.
	Clock clock.PassiveClock
	// Policy maps errors to requeues. Nil means requeue's defaults.
	Policy *requeue.Policy
	// Informers are the manager's cache informers (mgr.GetCache()): a read
	// older than this controller's last write waits for their events. Nil
	// means a stale read is retried shortly instead.
	Informers cache.Informers
	// Workers is how many Ats are reconciled at once (different Ats only:
	// the workqueue never hands one At to two workers). Zero means
	// [DefaultWorkers].
	Workers int
	// Shard, when set, shares the Ats among the replicas that run the
	// controller: this one reconciles only the Ats of the ranges the Member
	// holds ([shard.Guard]), never acts on an At of a range it is giving
	// up, and labels each Pod with its At's range ([follow.Label]).
	// Add the Member to the manager too (mgr.Add), build the manager's
	// cache with [CacheOptions] so that it holds only the Ats of those
	// ranges and their Pods, and turn the manager's leader election off:
	// every replica works. Nil means one replica reconciles every At.
	Shard *shard.Member
}

// FirstStatusWithin is how soon after its creation an At must fall due for
// its PENDING status to be skipped: the RUNNING status, written moments
// later, says more (see reconcile.Loop.FirstStatusWithin).
const FirstStatusWithin = 10 * time.Second

// DefaultWorkers is the default of Options.Workers. A reconcile spends its
// time waiting for the API server, so a few workers keep it busy when many
// Ats fall due at the same instant; every reconcilekit package is safe for
// concurrent use.
const DefaultWorkers = 4

// New returns the At reconciler: a reconcile.Loop whose Sync is the At's own
// logic.
func New(o Options) (*reconcile.Loop[*atv1.At], error) {
	if o.Client == nil || o.Scheme == nil {
		return nil, errors.New("at controller: Options.Client and Options.Scheme are required")
	}
	if o.APIReader == nil {
		o.APIReader = o.Client
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	// One guarded client for the loop and the At's own reads and writes, so
	// that neither acts on a copy older than the other's last write.
	c := o.Client
	if freshness.TrackerOf(c) == nil {
		c = (&freshness.Tracker{Informers: o.Informers}).Wrap(c)
	}
	r := &AtReconciler{client: c, apiReader: o.APIReader, scheme: o.Scheme, recorder: o.Recorder, clock: o.Clock, shard: o.Shard}
	fin := &finalizer.Registry[*atv1.At]{}
	if err := fin.Register(PodCleanupFinalizer, finalizer.Func[*atv1.At](r.deletePod)); err != nil {
		return nil, err
	}
	loop := reconcile.New(r.client, Name, r.sync)
	// An At due within seconds of its creation goes straight from no status
	// to RUNNING: its PENDING would be overwritten moments later.
	loop.FirstStatusWithin = FirstStatusWithin
	loop.APIReader = o.APIReader
	loop.Finalizers = fin
	loop.Policy = o.Policy
	loop.Recorder = r.recorder
	loop.Clock = r.clock
	return loop, loop.Validate()
}

// The permissions the controller needs, from which `make generate` writes
// examples/at/config/rbac/role.yaml (leader election's are in
// leader_election_role.yaml beside it). The e2e tests run the operator with
// only these and fail when one is missing.
//
// +kubebuilder:rbac:groups=cnat.reconcilekit.dev,resources=ats,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cnat.reconcilekit.dev,resources=ats/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cnat.reconcilekit.dev,resources=ats/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CacheByObject returns the manager cache settings the At controller needs:
// Pods are cached only when they carry [AtUIDLabel], that is when an At
// created them, so that a cluster full of other Pods costs the controller
// neither memory nor watch traffic. Pass it in the manager's options:
//
//	ctrl.Options{Cache: cache.Options{ByObject: controller.CacheByObject()}}
//
// A Pod whose label someone removed is then invisible to the controller, as
// it is to the At's watch.
func CacheByObject() map[client.Object]cache.ByObject {
	hasAt, err := labels.NewRequirement(AtUIDLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasAt)}}
}

// PodFields are the fields of its Pods the At controller reads, beside their
// metadata: whether a Pod has finished (podFinished, observe) and its exit
// code. [DietCacheOptions] caches these alone.
var PodFields = []string{"status.phase", "status.containerStatuses.state.terminated.exitCode"}

// DietCacheOptions returns base on the diet (package diet): every object's
// managedFields kept to what the library reads, under the controller's
// field owner (diet.CacheOptions), the Ats without managedFields, the
// strings objects hold alike in one copy (diet.Intern), and the Pods kept to
// their metadata and [PodFields], stored compact (diet.Compact); the other
// settings in base (CacheByObject's label selector) stay. The At controller
// reads nothing else of them: a Pod it must compare whole (drift's Ensure,
// when the Pod already exists) is read from the API server, and nothing it
// does with an At reads the At's managedFields (reconcile.Loop, its status
// and finalizer writers: only drift's Ensure and compare.Diff do, and the
// controller never ensures an At). Pass it the options [CacheByObject] or
// [CacheOptions] made:
//
//	opts, err := controller.DietCacheOptions(cache.Options{ByObject: controller.CacheByObject()})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
func DietCacheOptions(base cache.Options) (cache.Options, error) {
	pods, err := diet.Fields(&corev1.Pod{}, PodFields...)
	if err != nil {
		return cache.Options{}, err
	}
	ats := cache.TransformStripManagedFields()
	byObject := make(map[client.Object]cache.ByObject, len(base.ByObject)+2)
	podSet, atSet := false, false
	for obj, bo := range base.ByObject {
		switch obj.(type) {
		case *corev1.Pod:
			bo.Transform = then(bo.Transform, pods)
			podSet = true
		case *atv1.At:
			bo.Transform = then(bo.Transform, ats)
			atSet = true
		}
		byObject[obj] = bo
	}
	if !podSet {
		byObject[&corev1.Pod{}] = cache.ByObject{Transform: pods}
	}
	if !atSet {
		byObject[&atv1.At{}] = cache.ByObject{Transform: ats}
	}
	base.ByObject = byObject
	return diet.CacheOptions(base, Name)
}

// then returns a transform running first, when there is one, and then
// second.
func then(first, second toolscache.TransformFunc) toolscache.TransformFunc {
	if first == nil {
		return second
	}
	return func(in any) (any, error) {
		out, err := first(in)
		if err != nil {
			return nil, err
		}
		return second(out)
	}
}

// CacheOptions returns the manager cache settings of a sharded At
// controller: base with [CacheByObject]'s, and the At and Pod informers
// following the ranges m holds (follow.CacheOptions), so that a
// replica caches only the Ats of its ranges and their Pods (labelled with
// their At's range when the controller creates them). Pass the same m as
// Options.Shard:
//
//	copts, err := controller.CacheOptions(cache.Options{}, member)
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: copts})
func CacheOptions(base cache.Options, m *shard.Member) (cache.Options, error) {
	byObject := maps.Clone(base.ByObject)
	if byObject == nil {
		byObject = map[client.Object]cache.ByObject{}
	}
	maps.Copy(byObject, CacheByObject())
	base.ByObject = byObject
	return follow.CacheOptions(base, m, follow.Kinds{Objects: []client.Object{&atv1.At{}}, Children: []client.Object{&corev1.Pod{}}})
}

// SetupWithManager registers the At controller: it watches Ats and the Pods
// they own. Status-only updates of an At (our own writes) do not trigger a
// reconcile; spec changes and deletion do; of its Pod, only finishing and
// deletion do. Zero fields of o come from the manager.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if o.Client == nil {
		o.Client = mgr.GetClient()
	}
	if o.APIReader == nil {
		o.APIReader = mgr.GetAPIReader()
	}
	if o.Scheme == nil {
		o.Scheme = mgr.GetScheme()
	}
	if o.Recorder == nil {
		// The events client-go's broadcaster (mgr.GetEventRecorder) would
		// send, without its copy of each for 6 to 12 minutes (issue 38).
		rec := recorder.New(mgr.GetClient(), Name)
		if o.Shard != nil {
			// No event about an At of a range this replica lost, or
			// could not renew: asked just before each is sent.
			rec.Fence = o.Shard.Check
		}
		if err := mgr.Add(rec); err != nil {
			return err
		}
		o.Recorder = rec
	}
	if o.Informers == nil {
		o.Informers = mgr.GetCache()
	}
	loop, err := New(o)
	if err != nil {
		return err
	}
	workers := o.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	ats := reconcile.Predicate()
	var r crreconcile.Reconciler = loop
	b := ctrl.NewControllerManagedBy(mgr)
	if o.Shard != nil {
		// With a cache that follows the Member's ranges (CacheOptions),
		// the Ats of a range this replica acquires come as new objects,
		// and those of a range it left as deleted ones, which Predicate
		// drops; Guard fences every reconcile.
		ats = predicate.And(ats, ranges.Predicate(o.Shard))
		r = shard.Guard[*atv1.At](o.Shard, mgr.GetClient(), loop)
	}
	return b.For(&atv1.At{}, builder.WithPredicates(ats)).
		Owns(&corev1.Pod{}, builder.WithPredicates(podFinished())).
		Named("at").
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// sync moves an At through PENDING -> RUNNING -> DONE and reports how far
// along it is.
func (r *AtReconciler) sync(ctx context.Context, at *atv1.At) (reconcile.Progress, error) {
	logger := log.FromContext(ctx).WithValues("phase", at.Status.Phase)
	switch at.Status.Phase {
	case atv1.PhaseDone:
		return progress(at), nil
	case atv1.PhaseRunning:
		err := r.observePod(ctx, at)
		return progress(at), err
	}

	// PENDING (or new): wait for the schedule, then start the Pod.
	// RFC 3339 allows a lower-case "t" and "z"; Go's parser does not.
	when, err := time.Parse(time.RFC3339, strings.ToUpper(at.Spec.Schedule))
	if err != nil {
		return reconcile.Progress{}, errors.Permanent(errors.WithReason(
			fmt.Errorf("spec.schedule %q is not an RFC 3339 time", at.Spec.Schedule), ReasonInvalidSchedule))
	}
	at.Status.Phase = atv1.PhasePending
	if r.clock.Now().Before(when) {
		logger.V(1).Info("waiting for the schedule", "schedule", when)
		p := progress(at)
		p.Requeue = requeue.At(when, requeue.WithClock(r.clock))
		return p, nil
	}

	pod := desiredPod(at)
	if r.shard != nil {
		// The replica that holds the At's range caches its Pod by this
		// label.
		if err := follow.Label(r.shard, at, pod); err != nil {
			return reconcile.Progress{}, err
		}
	}
	w := drift.NewWriter(r.client, Name)
	// A Pod the cache keeps in part (DietCacheOptions) is compared whole.
	w.APIReader = r.apiReader
	opts := []drift.Option{drift.Owner(at)}
	if r.shard != nil {
		// A patch of a Pod that exists carries the resourceVersion read: if
		// this replica lost the At's range after the read, the server
		// refuses it rather than apply it over the new holder's write.
		opts = append(opts, drift.OptimisticLock())
	}
	outcome, err := w.Ensure(ctx, pod, opts...)
	if apierrors.IsAlreadyExists(err) && r.shard != nil {
		// Not in this replica's cache, yet there: a Pod created before the
		// controller ran sharded, without the label.
		err = r.adoptPod(ctx, at, client.ObjectKeyFromObject(pod), pod)
	}
	if err != nil {
		return reconcile.Progress{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	logger.Info("pod ensured", "pod", pod.Name, "operation", outcome.Operation)
	at.Status.Phase = atv1.PhaseRunning
	at.Status.PodName = pod.Name
	// Ensure left the live Pod in pod. It may have existed already (this At
	// was read from a stale cache after an earlier reconcile created it)
	// and even have finished: look at it now, as no further Pod event may
	// come to wake us.
	observe(at, pod)
	return progress(at), nil
}

// observePod moves a RUNNING At to DONE when its Pod has finished.
func (r *AtReconciler) observePod(ctx context.Context, at *atv1.At) error {
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: at.Namespace, Name: at.Status.PodName}
	// The guarded client waits for a Pod this controller created a moment
	// ago rather than report it missing. The Pod is only looked at: read
	// without a copy of the cache's own.
	err := r.client.Get(ctx, key, pod, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) && r.shard != nil {
		// Sharded, the cache holds only the Pods labelled with a range
		// held: a Pod created before the controller ran sharded has no
		// label. Ask the API server before the irreversible DONE, into a
		// Pod of its own: pod may hold the maps of the cache's (a stale read
		// the guard retried), which decoding into it would change.
		pod = &corev1.Pod{}
		err = r.adoptPod(ctx, at, key, pod)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Someone deleted the Pod before it finished. An At runs its command
		// at most once, so it is DONE, failed; it never starts a second Pod.
		at.Status.Phase = atv1.PhaseDone
		at.Status.Outcome = atv1.OutcomeFailed
		return nil
	case err != nil:
		return fmt.Errorf("get pod %s: %w", key.Name, err)
	}
	observe(at, pod)
	return nil
}

// adoptPod reads the At's Pod from the API server and, when it exists
// without its At's range label, labels it so that this replica's cache
// holds it and its finishing wakes the At.
func (r *AtReconciler) adoptPod(ctx context.Context, at *atv1.At, key client.ObjectKey, pod *corev1.Pod) error {
	if err := r.apiReader.Get(ctx, key, pod); err != nil {
		return err
	}
	labelled := pod.DeepCopy()
	if err := follow.Label(r.shard, at, labelled); err != nil {
		return err
	}
	if maps.Equal(labelled.Labels, pod.Labels) {
		return nil
	}
	// Locked, so that a replica that lost the range after its read labels
	// nothing the new holder changed since.
	if err := r.client.Patch(ctx, labelled, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("label pod %s with its At's range: %w", key.Name, err)
	}
	log.FromContext(ctx).Info("labelled a Pod created before the controller ran sharded", "pod", key.Name)
	*pod = *labelled
	return nil
}

// observe moves a RUNNING At to DONE when its Pod has finished; until then
// the Pod's finishing wakes us (see podFinished).
func observe(at *atv1.At, pod *corev1.Pod) {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		at.Status.Outcome = atv1.OutcomeSucceeded
	case corev1.PodFailed:
		at.Status.Outcome = atv1.OutcomeFailed
	default:
		return
	}
	at.Status.Phase = atv1.PhaseDone
	at.Status.ExitCode = exitCode(pod)
}

// podFinished lets through the Pod events an At acts on: its Pod is seen
// finished (Succeeded or Failed) for the first time, or is gone. The Pod's
// creation (we created it) and its other changes (scheduled, started) need
// no reconcile, and skipping them spares a reconcile that would read the At
// from a cache not yet holding our last status write.
//
// "Seen finished for the first time" is an update to finished, or the add
// of a Pod that is finished already: an informer that lists again (after an
// API server restart, an expired watch, or a range a sharded replica
// acquires) adds every Pod it did not hold, and a Pod created and finished
// while its watch was down comes only as such an add. Its At waits for no
// other event: an At woken only by updates stayed RUNNING for good (issue
// 39, TestAnAtWakesWhenItsPodIsFirstSeenFinished).
func podFinished() predicate.Funcs {
	finished := func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return finished(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !finished(e.ObjectOld) && finished(e.ObjectNew) },
	}
}

// progress is the At's summary for its conditions: PENDING and RUNNING are
// in progress, DONE is Ready when the command succeeded and Stalled (a final
// failure) when it did not.
func progress(at *atv1.At) reconcile.Progress {
	switch at.Status.Phase {
	case atv1.PhaseRunning:
		return reconcile.Progress{State: reconcile.InProgress, Reason: ReasonPodRunning,
			Message: fmt.Sprintf("pod %s runs the command", at.Status.PodName)}
	case atv1.PhaseDone:
		if at.Status.Outcome == atv1.OutcomeSucceeded {
			return reconcile.Progress{State: reconcile.Done, Reason: ReasonCommandSucceeded,
				Message: fmt.Sprintf("pod %s ran the command successfully", at.Status.PodName)}
		}
		msg := fmt.Sprintf("pod %s failed or was deleted before it finished", at.Status.PodName)
		if at.Status.ExitCode != nil {
			msg = fmt.Sprintf("pod %s failed with exit code %d", at.Status.PodName, *at.Status.ExitCode)
		}
		return reconcile.Progress{State: reconcile.Failed, Reason: ReasonCommandFailed, Message: msg}
	default:
		return reconcile.Progress{State: reconcile.InProgress, Reason: ReasonScheduled,
			Message: "the command runs at " + at.Spec.Schedule}
	}
}

// deletePod is the At's finalizer: a Pod still running when its At is
// deleted is deleted first, so the command stops with its At rather than
// whenever the garbage collector gets to it. A DONE At's Pod is left to the
// garbage collector.
func (r *AtReconciler) deletePod(ctx context.Context, at *atv1.At) error {
	if at.Status.Phase == atv1.PhaseDone {
		// The command has finished: nothing to stop. The garbage collector
		// removes the Pod with its owner, as for any owned object.
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: PodName(at)}}
	err := r.client.Delete(ctx, pod, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	if r.recorder != nil {
		r.recorder.Eventf(at, pod, corev1.EventTypeNormal, ReasonPodDeleted, "Finalize", "deleted pod %s", pod.Name)
	}
	return nil
}

// PodName is the At's one Pod: derived from the At's name and UID, so a
// restarted controller finds the Pod it created and an At re-created under
// the same name gets a new one. It is at most 61 characters, so the Pod's
// hostname (at most 63) is its name: the At's name is cut to 52 characters,
// and a '.' or '-' the cut leaves at the end is dropped, since a name part
// must end with a letter or digit.
func PodName(at *atv1.At) string {
	name := at.Name
	if len(name) > 52 {
		name = strings.TrimRight(name[:52], ".-")
	}
	uid := string(at.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return name + "-" + uid
}

func desiredPod(at *atv1.At) *corev1.Pod {
	image := at.Spec.Image
	if image == "" {
		image = atv1.DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: at.Namespace,
			Name:      PodName(at),
			// The UID, not the name: a label value is at most 63 characters,
			// an At's name up to 253.
			Labels: map[string]string{AtUIDLabel: string(at.UID)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "command",
				Image:   image,
				Command: []string{"/bin/sh", "-c", at.Spec.Command},
			}},
		},
	}
}

func exitCode(pod *corev1.Pod) *int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			code := t.ExitCode
			return &code
		}
	}
	return nil
}
