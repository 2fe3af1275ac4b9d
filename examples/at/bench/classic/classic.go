package classic

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// Name is the classic controller's name, as it appears in
// controller-runtime's metrics (label controller="classic-at").
const Name = "classic-at"

// AtLabel is the label the classic controller puts on an At's Pod, with the
// At's name as its value (the same label as the library-based controller).
const AtLabel = "cnat.reconcilekit.dev/at"

// Reconciler is the classic At reconciler. Client and Scheme are required;
// a nil Clock is the real clock.
type Reconciler struct {
	// Client reads (from the manager's cache) and writes.
	Client client.Client
	// Scheme knows the At and Pod types, for the Pod's owner reference.
	Scheme *runtime.Scheme
	// Clock decides when a schedule is due.
	Clock clock.PassiveClock
	// Workers is how many Ats are reconciled at once; zero means
	// controller-runtime's default, 1.
	Workers int
}

// SetupWithManager registers r with mgr under [Name]: it watches Ats (every
// change, its own status writes included, as For does by default) and the
// Pods they own, with r.Workers workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&atv1.At{}).
		Owns(&corev1.Pod{}).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		Complete(r)
}

// Reconcile moves an At through PENDING -> RUNNING -> DONE, the classic way.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	at := &atv1.At{}
	if err := r.Client.Get(ctx, req.NamespacedName, at); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted: the garbage collector takes the Pod
		}
		return ctrl.Result{}, err
	}
	before := at.Status.DeepCopy()
	if at.Status.Phase == "" {
		at.Status.Phase = atv1.PhasePending
	}

	result := ctrl.Result{}
	switch at.Status.Phase {
	case atv1.PhasePending:
		when, err := time.Parse(time.RFC3339, strings.ToUpper(at.Spec.Schedule))
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("parse schedule %q: %w", at.Spec.Schedule, err)
		}
		if d := when.Sub(r.now()); d > 0 {
			logger.V(1).Info("waiting for the schedule", "in", d)
			result = ctrl.Result{RequeueAfter: d}
			break
		}
		at.Status.Phase = atv1.PhaseRunning
		at.Status.PodName = PodName(at)
	case atv1.PhaseRunning:
		pod := newPod(at)
		if err := controllerutil.SetControllerReference(at, pod, r.Scheme); err != nil {
			return ctrl.Result{}, err
		}
		found := &corev1.Pod{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(pod), found)
		switch {
		case apierrors.IsNotFound(err):
			if err := r.Client.Create(ctx, pod); err != nil {
				return ctrl.Result{}, err
			}
			logger.Info("pod created", "pod", pod.Name)
		case err != nil:
			return ctrl.Result{}, err
		case found.Status.Phase == corev1.PodSucceeded:
			at.Status.Phase = atv1.PhaseDone
			at.Status.Outcome = atv1.OutcomeSucceeded
			at.Status.ExitCode = exitCode(found)
		case found.Status.Phase == corev1.PodFailed:
			at.Status.Phase = atv1.PhaseDone
			at.Status.Outcome = atv1.OutcomeFailed
			at.Status.ExitCode = exitCode(found)
		}
	case atv1.PhaseDone:
		return ctrl.Result{}, nil
	}

	if !reflect.DeepEqual(*before, at.Status) {
		if err := r.Client.Status().Update(ctx, at); err != nil {
			return ctrl.Result{}, err
		}
	}
	return result, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return clock.RealClock{}.Now()
}

// PodName is the name of the At's Pod: the At's name and "-pod", as in
// cnat. It is deterministic, so a restarted controller finds its Pod.
func PodName(at *atv1.At) string {
	name := at.Name
	if len(name) > 59 {
		name = name[:59]
	}
	return name + "-pod"
}

func newPod(at *atv1.At) *corev1.Pod {
	image := at.Spec.Image
	if image == "" {
		image = atv1.DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: at.Namespace,
			Name:      PodName(at),
			Labels:    map[string]string{AtLabel: at.Name},
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
