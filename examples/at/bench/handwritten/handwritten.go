package handwritten

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// Name is the controller's name: its field manager, event source and the
// controller label of controller-runtime's metrics.
const Name = "handwritten-at"

// The same label, finalizer, condition types and reasons as the library's At.
const (
	AtUIDLabel          = "cnat.reconcilekit.dev/at-uid"
	PodCleanupFinalizer = "cnat.reconcilekit.dev/pod-cleanup"

	TypeReady       = "Ready"
	TypeReconciling = "Reconciling"
	TypeStalled     = "Stalled"

	ReasonScheduled        = "Scheduled"
	ReasonPodRunning       = "PodRunning"
	ReasonCommandSucceeded = "CommandSucceeded"
	ReasonCommandFailed    = "CommandFailed"
	ReasonPodDeleted       = "PodDeleted"
	ReasonInvalidSchedule  = "InvalidSchedule"
)

// FirstStatusWithin is how soon after its creation an At must fall due for
// its PENDING status to be skipped (the library At's value).
const FirstStatusWithin = 10 * time.Second

// conflictDelay is how long a conflicting reconcile waits before it runs
// again: long enough for the cache to catch up (requeue.Policy's default).
const conflictDelay = 100 * time.Millisecond

// Reconciler is the hand-written At reconciler. Client and Scheme are
// required; a nil Recorder records no events, a nil Clock is the real one.
type Reconciler struct {
	// Client reads (from the manager's cache) and writes.
	Client client.Client
	// Scheme knows the At and Pod types, for the Pod's owner reference.
	Scheme *runtime.Scheme
	// Recorder records the At's events.
	Recorder events.EventRecorder
	// Clock decides when a schedule is due.
	Clock clock.PassiveClock
	// Workers is how many Ats are reconciled at once; zero means 4, the
	// library At's default.
	Workers int
}

// CacheByObject caches only the Pods an At created (labelled with its UID),
// as the library's At does.
func CacheByObject() map[client.Object]cache.ByObject {
	hasAt, err := labels.NewRequirement(AtUIDLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasAt)}}
}

// SetupWithManager registers r with mgr under [Name]: Ats pass on a
// generation change (spec, deletion), a finalizer change or a resync; their
// Pods when they finish or go away.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	workers := r.Workers
	if workers <= 0 {
		workers = 4
	}
	atChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() ||
			!equality.Semantic.DeepEqual(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
	}}
	finished := func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	}
	podFinished := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool { return !finished(e.ObjectOld) && finished(e.ObjectNew) },
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&atv1.At{}, builder.WithPredicates(atChanged)).
		Owns(&corev1.Pod{}, builder.WithPredicates(podFinished)).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile moves an At through PENDING -> RUNNING -> DONE.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	at := &atv1.At{}
	if err := r.Client.Get(ctx, req.NamespacedName, at); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !at.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, at)
	}
	if !controllerutil.ContainsFinalizer(at, PodCleanupFinalizer) {
		base := at.DeepCopy()
		controllerutil.AddFinalizer(at, PodCleanupFinalizer)
		err := r.Client.Patch(ctx, at, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(Name))
		if err != nil {
			return quiet(err)
		}
	}
	before := at.Status.DeepCopy()
	summaryBefore := summarize(at)

	result, state, err := r.advance(ctx, at)
	switch {
	case apierrors.IsConflict(err):
		return quiet(err)
	case err != nil && !isTerminal(err):
		return ctrl.Result{}, err
	case err == nil && summaryBefore == "" && state.inProgress && r.firstStatusCanWait(at, result):
		return result, nil // the next reconcile, moments away, writes the status
	}
	r.setConditions(at, state)
	at.Status.ObservedGeneration = at.Generation
	if !equality.Semantic.DeepEqual(before, &at.Status) {
		if werr := r.Client.Status().Update(ctx, at, client.FieldOwner(Name)); werr != nil {
			if err != nil {
				return ctrl.Result{}, err
			}
			return quiet(werr)
		}
		if after := summarize(at); after != summaryBefore {
			r.recordTransition(at, after, state)
		}
	}
	return result, err
}

// state is how far along an At is, for its conditions.
type state struct {
	inProgress bool
	// ready is true when the command succeeded; otherwise a DONE At stalled.
	ready           bool
	reason, message string
}

// advance moves the At along and says where it stands. A schedule that
// cannot be parsed is a terminal error, reported on the conditions.
func (r *Reconciler) advance(ctx context.Context, at *atv1.At) (ctrl.Result, state, error) {
	switch at.Status.Phase {
	case atv1.PhaseDone:
		return ctrl.Result{}, stateOf(at), nil
	case atv1.PhaseRunning:
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: at.Namespace, Name: at.Status.PodName}, pod)
		switch {
		case apierrors.IsNotFound(err):
			at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeFailed
		case err != nil:
			return ctrl.Result{}, state{}, fmt.Errorf("get pod %s: %w", at.Status.PodName, err)
		default:
			observe(at, pod)
		}
		return ctrl.Result{}, stateOf(at), nil
	}
	when, err := time.Parse(time.RFC3339, strings.ToUpper(at.Spec.Schedule))
	if err != nil {
		msg := fmt.Sprintf("spec.schedule %q is not an RFC 3339 time", at.Spec.Schedule)
		return ctrl.Result{}, state{reason: ReasonInvalidSchedule, message: msg}, reconcile.TerminalError(fmt.Errorf("%s: %w", msg, err))
	}
	at.Status.Phase = atv1.PhasePending
	if d := when.Sub(r.now()); d > 0 {
		return ctrl.Result{RequeueAfter: d}, stateOf(at), nil
	}
	pod := desiredPod(at)
	if err := controllerutil.SetControllerReference(at, pod, r.Scheme); err != nil {
		return ctrl.Result{}, state{}, err
	}
	err = r.Client.Create(ctx, pod, client.FieldOwner(Name))
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier reconcile whose status write this cached At
		// does not show yet: look at it, as no Pod event may come.
		err = r.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)
	}
	if err != nil {
		return ctrl.Result{}, state{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	log.FromContext(ctx).Info("pod created", "pod", pod.Name)
	at.Status.Phase, at.Status.PodName = atv1.PhaseRunning, pod.Name
	observe(at, pod)
	return ctrl.Result{}, stateOf(at), nil
}

// stateOf is the At's phase in terms of its conditions.
func stateOf(at *atv1.At) state {
	switch at.Status.Phase {
	case atv1.PhaseRunning:
		return state{inProgress: true, reason: ReasonPodRunning, message: fmt.Sprintf("pod %s runs the command", at.Status.PodName)}
	case atv1.PhaseDone:
		if at.Status.Outcome == atv1.OutcomeSucceeded {
			return state{ready: true, reason: ReasonCommandSucceeded, message: fmt.Sprintf("pod %s ran the command successfully", at.Status.PodName)}
		}
		msg := fmt.Sprintf("pod %s failed or was deleted before it finished", at.Status.PodName)
		if at.Status.ExitCode != nil {
			msg = fmt.Sprintf("pod %s failed with exit code %d", at.Status.PodName, *at.Status.ExitCode)
		}
		return state{reason: ReasonCommandFailed, message: msg}
	}
	return state{inProgress: true, reason: ReasonScheduled, message: "the command runs at " + at.Spec.Schedule}
}

// setConditions writes the kstatus conditions of s: Reconciling and Stalled
// only while True, Ready always.
func (r *Reconciler) setConditions(at *atv1.At, s state) {
	set := func(t string, st metav1.ConditionStatus) {
		meta.SetStatusCondition(&at.Status.Conditions, metav1.Condition{Type: t, Status: st, Reason: s.reason,
			Message: s.message, ObservedGeneration: at.Generation, LastTransitionTime: metav1.NewTime(r.now().Truncate(time.Second))})
	}
	switch {
	case s.inProgress:
		set(TypeReconciling, metav1.ConditionTrue)
		set(TypeReady, metav1.ConditionUnknown)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeStalled)
	case s.ready:
		set(TypeReady, metav1.ConditionTrue)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeReconciling)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeStalled)
	default:
		set(TypeStalled, metav1.ConditionTrue)
		set(TypeReady, metav1.ConditionFalse)
		meta.RemoveStatusCondition(&at.Status.Conditions, TypeReconciling)
	}
}

// summarize names the True kstatus condition and its reason and message,
// "" when none is True.
func summarize(at *atv1.At) string {
	for _, t := range []string{TypeStalled, TypeReconciling, TypeReady} {
		if c := meta.FindStatusCondition(at.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return t + "\x00" + c.Reason + "\x00" + c.Message
		}
	}
	return ""
}

// recordTransition records a Normal event when the At became Ready and a
// Warning when it stalled.
func (r *Reconciler) recordTransition(at *atv1.At, summary string, s state) {
	if r.Recorder == nil {
		return
	}
	switch {
	case strings.HasPrefix(summary, TypeStalled+"\x00"):
		r.Recorder.Eventf(at, nil, corev1.EventTypeWarning, s.reason, TypeStalled, "%s", s.message)
	case strings.HasPrefix(summary, TypeReady+"\x00"):
		r.Recorder.Eventf(at, nil, corev1.EventTypeNormal, s.reason, TypeReady, "%s", s.message)
	}
}

// firstStatusCanWait reports whether a new At's first, in-progress status
// may wait for the requeue result asks for, moments away.
func (r *Reconciler) firstStatusCanWait(at *atv1.At, result ctrl.Result) bool {
	age := r.now().Sub(at.CreationTimestamp.Time)
	return result.RequeueAfter > 0 && age >= 0 && age < FirstStatusWithin && result.RequeueAfter < FirstStatusWithin-age
}

// finalize deletes a Pod still running when its At is deleted, then removes
// the finalizer.
func (r *Reconciler) finalize(ctx context.Context, at *atv1.At) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(at, PodCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	if at.Status.Phase != atv1.PhaseDone {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: PodName(at)}}
		err := r.Client.Delete(ctx, pod, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case err == nil:
			if r.Recorder != nil {
				r.Recorder.Eventf(at, pod, corev1.EventTypeNormal, ReasonPodDeleted, "Finalize", "deleted pod %s", pod.Name)
			}
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, fmt.Errorf("delete pod %s: %w", pod.Name, err)
		}
	}
	base := at.DeepCopy()
	controllerutil.RemoveFinalizer(at, PodCleanupFinalizer)
	err := r.Client.Patch(ctx, at, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(Name))
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return quiet(err)
}

// quiet turns a conflict into a short requeue without an error: the
// reconcile saw a stale At and the next one decides.
func quiet(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictDelay}, nil
	}
	return ctrl.Result{}, err
}

func isTerminal(err error) bool {
	return err != nil && errors.Is(err, reconcile.TerminalError(nil))
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// observe moves a RUNNING At to DONE when its Pod has finished.
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
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			code := t.ExitCode
			at.Status.ExitCode = &code
			break
		}
	}
}

// PodName is the At's one Pod, named as the library's At names it.
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
			Labels:    map[string]string{AtUIDLabel: string(at.UID)},
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
