// Package podtest plays the kubelet for the At's tests: envtest runs no
// kubelet, so a test finishes a Pod by writing the status a kubelet would
// report once the Pod's one container has exited.
package podtest

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finish sets pod's status to what a kubelet reports when its first
// container exited with code exit: phase Succeeded (exit 0) or Failed, and
// that container terminated. It writes nothing; see [Complete].
func Finish(pod *corev1.Pod, exit int32) {
	pod.Status.Phase = corev1.PodSucceeded
	if exit != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	now := metav1.Now()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Reason: "Completed", StartedAt: now, FinishedAt: now}},
	}}
}

// Finished reports whether pod has finished: Succeeded or Failed.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Complete finishes pod with exit code 0 and writes its status, as a
// kubelet would: on a conflict it reads the Pod again and retries unless
// it has meanwhile finished or begun deletion; it stops when the Pod is
// gone, when a read fails, or when ctx is done, and waits 50ms after any
// other error.
func Complete(ctx context.Context, c client.Client, pod *corev1.Pod) {
	for ctx.Err() == nil {
		Finish(pod, 0)
		err := c.Status().Update(ctx, pod)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return
		case apierrors.IsConflict(err):
			fresh := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
				return
			}
			if Finished(fresh) || fresh.DeletionTimestamp != nil {
				return
			}
			pod = fresh
		default:
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
