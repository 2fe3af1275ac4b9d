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
	"github.com/reconcilekit/reconcilekit/examples/at/bench/internal/atrecord"
)

// Name is the controller's name: its field manager, event source and the
// controller label of controller-runtime's metrics.
const Name = "handwritten-at"

// The same label, finalizer, condition types and reasons as the library's
// At (package atrecord).
const (
	AtUIDLabel          = atrecord.AtUIDLabel
	PodCleanupFinalizer = atrecord.PodCleanupFinalizer

	TypeReady       = atrecord.TypeReady
	TypeReconciling = atrecord.TypeReconciling
	TypeStalled     = atrecord.TypeStalled

	ReasonScheduled        = atrecord.ReasonScheduled
	ReasonPodRunning       = atrecord.ReasonPodRunning
	ReasonCommandSucceeded = atrecord.ReasonCommandSucceeded
	ReasonCommandFailed    = atrecord.ReasonCommandFailed
	ReasonPodDeleted       = atrecord.ReasonPodDeleted
	ReasonInvalidSchedule  = atrecord.ReasonInvalidSchedule
)

// FirstStatusWithin is how soon after its creation an At must fall due for
// its PENDING status to be skipped (the library At's value).
const FirstStatusWithin = atrecord.FirstStatusWithin

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
	summaryBefore := atrecord.Summarize(at)

	result, state, err := r.advance(ctx, at)
	switch {
	case apierrors.IsConflict(err):
		return quiet(err)
	case err != nil && !isTerminal(err):
		return ctrl.Result{}, err
	case err == nil && summaryBefore == "" && state.InProgress && r.firstStatusCanWait(at, result):
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
		if after := atrecord.Summarize(at); after != summaryBefore {
			r.recordTransition(at, after, state)
		}
	}
	return result, err
}

// state is how far along an At is, for its conditions.
type state = atrecord.State

// advance moves the At along and says where it stands. A schedule that
// cannot be parsed is a terminal error, reported on the conditions.
func (r *Reconciler) advance(ctx context.Context, at *atv1.At) (ctrl.Result, state, error) {
	switch at.Status.Phase {
	case atv1.PhaseDone:
		return ctrl.Result{}, atrecord.StateOf(at), nil
	case atv1.PhaseRunning:
		pod := &corev1.Pod{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: at.Namespace, Name: at.Status.PodName}, pod)
		switch {
		case apierrors.IsNotFound(err):
			at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeFailed
		case err != nil:
			return ctrl.Result{}, state{}, fmt.Errorf("get pod %s: %w", at.Status.PodName, err)
		default:
			atrecord.Observe(at, pod)
		}
		return ctrl.Result{}, atrecord.StateOf(at), nil
	}
	when, err := time.Parse(time.RFC3339, strings.ToUpper(at.Spec.Schedule))
	if err != nil {
		msg := fmt.Sprintf("spec.schedule %q is not an RFC 3339 time", at.Spec.Schedule)
		return ctrl.Result{}, state{Reason: ReasonInvalidSchedule, Message: msg}, reconcile.TerminalError(fmt.Errorf("%s: %w", msg, err))
	}
	at.Status.Phase = atv1.PhasePending
	if d := when.Sub(r.now()); d > 0 {
		return ctrl.Result{RequeueAfter: d}, atrecord.StateOf(at), nil
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
	atrecord.Observe(at, pod)
	return ctrl.Result{}, atrecord.StateOf(at), nil
}

// setConditions writes the kstatus conditions of s (atrecord.SetConditions)
// at the Reconciler's time.
func (r *Reconciler) setConditions(at *atv1.At, s state) {
	atrecord.SetConditions(at, s, r.now())
}

// recordTransition records a Normal event when the At became Ready and a
// Warning when it stalled.
func (r *Reconciler) recordTransition(at *atv1.At, summary string, s state) {
	if r.Recorder == nil {
		return
	}
	switch {
	case strings.HasPrefix(summary, TypeStalled+"\x00"):
		r.Recorder.Eventf(at, nil, corev1.EventTypeWarning, s.Reason, TypeStalled, "%s", s.Message)
	case strings.HasPrefix(summary, TypeReady+"\x00"):
		r.Recorder.Eventf(at, nil, corev1.EventTypeNormal, s.Reason, TypeReady, "%s", s.Message)
	}
}

// firstStatusCanWait reports whether a new At's first, in-progress status
// may wait for the requeue result asks for, moments away.
func (r *Reconciler) firstStatusCanWait(at *atv1.At, result ctrl.Result) bool {
	return atrecord.FirstStatusCanWait(at, result.RequeueAfter, r.now())
}

// finalize deletes a Pod still running when its At is deleted, then removes
// the finalizer.
func (r *Reconciler) finalize(ctx context.Context, at *atv1.At) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(at, PodCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	if at.Status.Phase != atv1.PhaseDone {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: atrecord.PodName(at)}}
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

func desiredPod(at *atv1.At) *corev1.Pod {
	image := at.Spec.Image
	if image == "" {
		image = atv1.DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: at.Namespace,
			Name:      atrecord.PodName(at),
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

// PodName is the At's one Pod, named as the library's At names it.
func PodName(at *atv1.At) string { return atrecord.PodName(at) }
