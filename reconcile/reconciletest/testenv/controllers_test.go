package testenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestControllerManagerAndKwokRunWorkloads: a control plane started with
// ControllerManager and Kwok runs a Deployment's Pods to availability,
// fails a Job whose container exits 1, leaves a Pod whose nodeSelector no
// node matches Pending and Unschedulable, and garbage-collects a
// Deployment's ReplicaSet with it. Stop ends them with the control plane.
func TestControllerManagerAndKwokRunWorkloads(t *testing.T) {
	env.Require(t)
	dir, err := testenv.FindAssets()
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"kube-controller-manager", "kwok"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("no %s in %s: make test builds it", bin, dir)
			}
			t.Skipf("no %s in %s: go run ./cmd/envtest-assets -controller-manager -kwok v0.8.0 builds it", bin, dir)
		}
	}
	own, err := testenv.Start(testenv.Options{ControllerManager: true, Kwok: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := own.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx, c, ns := t.Context(), own.Client(t), own.Namespace(t)
	labels := map[string]string{"app": "web"}
	template := func(cmd ...string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: cmd}}}}
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template()}}
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := own.WaitFor(ctx, d, "2 available replicas at its generation", func() bool {
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 2
	}); err != nil {
		t.Fatal(err)
	}

	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fails"}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0), Template: template("false")}}
	job.Spec.Template.Labels = nil
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := own.WaitForCondition(ctx, job, string(batchv1.JobFailed), metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nowhere"}, Spec: template().Spec}
	pod.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := own.WaitFor(ctx, pod, "Unschedulable", func() bool {
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
		t.Errorf("the Pod no node matches: node %q, phase %s", pod.Spec.NodeName, pod.Status.Phase)
	}

	// The garbage collector deletes what the Deployment owned.
	if err := c.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	var sets appsv1.ReplicaSetList
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.List(ctx, &sets, client.InNamespace(ns)) == nil && len(sets.Items) == 0, nil
	}); err != nil {
		t.Fatalf("the Deployment's ReplicaSets were not collected: %d left", len(sets.Items))
	}
}

// TestStartWithoutTheControllerBinaries: asking for kube-controller-manager
// or kwok where the assets lack them fails with ErrNoAssets, saying which
// and how to build them, before anything starts.
func TestStartWithoutTheControllerBinaries(t *testing.T) {
	env.Require(t)
	dir := t.TempDir()
	real, err := testenv.FindAssets()
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if err := os.Symlink(filepath.Join(real, bin), filepath.Join(dir, bin)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	_, err = testenv.Start(testenv.Options{ControllerManager: true, Kwok: true})
	if !errors.Is(err, testenv.ErrNoAssets) {
		t.Fatalf("err = %v, want ErrNoAssets", err)
	}
	for _, want := range []string{"kube-controller-manager and kwok", "-controller-manager -kwok v0.8.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}
