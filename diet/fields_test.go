package diet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/reconcilekit/reconcilekit/diet"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
)

// finishedPod is a Pod as the API server sends it once its command has
// exited: spec defaulted, status filled, three managers' entries.
func finishedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "at-1-abcd", UID: "u1", ResourceVersion: "42", Generation: 1,
			Labels:          map[string]string{"cnat.reconcilekit.dev/at-uid": "a1"},
			Annotations:     map[string]string{"note": "n"},
			Finalizers:      []string{"f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cnat.reconcilekit.dev/v1alpha1", Kind: "At", Name: "at-1", UID: "a1", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{entry(owner, update, ours), status("kubelet", kubelet)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
			Containers: []corev1.Container{{Name: "command", Image: "busybox:1.36", Command: []string{"/bin/sh", "-c", "echo hi"},
				TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodFailed,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			HostIP:     "10.0.0.1",
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "command", Image: "busybox:1.36", ImageID: "sha256:1", RestartCount: 0,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "long output"}}},
				{Name: "waiting", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "Pulling"}}},
			},
		},
	}
}

// TestFieldsKeepsTheMetadataAndTheNamedFieldsOnly: a Pod watched for its
// phase and exit code keeps those, its whole metadata (what handlers,
// predicates and indexes read) and the part's entry in managedFields, and
// nothing else; the object it was given is left alone.
func TestFieldsKeepsTheMetadataAndTheNamedFieldsOnly(t *testing.T) {
	transform, err := diet.Fields(&corev1.Pod{}, "status.phase", "status.containerStatuses.state.terminated.exitCode")
	if err != nil {
		t.Fatal(err)
	}
	in := finishedPod()
	got, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: *finishedPod().ObjectMeta.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}},
			{},
		}},
	}
	want.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: diet.PartialManager, Operation: update, FieldsType: "FieldsV1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(finishedPod(), in); diff != "" {
		t.Errorf("the Pod given changed (-before +after):\n%s", diff)
	}
	if !diet.IsPartial(got.(*corev1.Pod)) || diet.IsPartial(in) {
		t.Errorf("IsPartial: kept %v, given %v; want true, false", diet.IsPartial(got.(*corev1.Pod)), diet.IsPartial(in))
	}
	again, err := transform(got)
	if err != nil || again != got {
		t.Errorf("a part passed again: %v, %v; want it unchanged", again, err)
	}
}

// TestFieldsPathsKeepWholeFieldsAndGoThroughLists: a path ending at an
// object keeps it whole, one path under another adds nothing, and a path
// through a list keeps its length.
func TestFieldsPathsKeepWholeFieldsAndGoThroughLists(t *testing.T) {
	transform, err := diet.Fields(&corev1.Pod{}, "spec.containers.name", "status", "status.phase", "spec.restartPolicy")
	if err != nil {
		t.Fatal(err)
	}
	got, err := transform(finishedPod())
	if err != nil {
		t.Fatal(err)
	}
	pod := got.(*corev1.Pod)
	if diff := cmp.Diff(finishedPod().Status, pod.Status); diff != "" {
		t.Errorf("status, kept whole (-want +got):\n%s", diff)
	}
	wantSpec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "command"}}}
	if diff := cmp.Diff(wantSpec, pod.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestFieldsRefusesWhatItCannotKeep: bad input is a clear error when the
// transform is made, never a panic when the cache runs it.
func TestFieldsRefusesWhatItCannotKeep(t *testing.T) {
	tests := []struct {
		name  string
		obj   any
		paths []string
		want  string
	}{
		{"an unknown field", &corev1.Pod{}, []string{"status.phaze"}, `"status.phaze": v1.PodStatus has no field "phaze"`},
		{"a field under a scalar", &corev1.Pod{}, []string{"status.phase.value"}, `status.phase is not an object`},
		{"metadata", &corev1.Pod{}, []string{"metadata.labels"}, `kept whole`},
		{"an empty path", &corev1.Pod{}, []string{""}, `empty`},
		{"an empty field name", &corev1.Pod{}, []string{"status..phase"}, `empty field name`},
		{"a nil object", (*corev1.Pod)(nil), nil, `nil object`},
		{"unstructured without a kind", &unstructured.Unstructured{}, nil, `apiVersion and kind`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch obj := tc.obj.(type) {
			case *corev1.Pod:
				_, err = diet.Fields(obj, tc.paths...)
			case *unstructured.Unstructured:
				_, err = diet.Fields(obj, tc.paths...)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent {
				t.Errorf("class %v, want permanent", class)
			}
		})
	}
	if _, err := diet.Fields(nil); err == nil {
		t.Error("Fields(nil) returned no error")
	}
}

// TestFieldsOnUnstructuredObjects keeps the same of an object's
// unstructured form, and passes other kinds through.
func TestFieldsOnUnstructuredObjects(t *testing.T) {
	kind := &unstructured.Unstructured{}
	kind.SetAPIVersion("v1")
	kind.SetKind("Pod")
	transform, err := diet.Fields(kind, "status.phase", "status.containerStatuses.state.terminated.exitCode")
	if err != nil {
		t.Fatal(err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(finishedPod())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	got, err := transform(u)
	if err != nil {
		t.Fatal(err)
	}
	kept := got.(*unstructured.Unstructured)
	if !diet.IsPartial(kept) || diet.IsPartial(u) {
		t.Errorf("IsPartial: kept %v, given %v; want true, false", diet.IsPartial(kept), diet.IsPartial(u))
	}
	wantStatus := map[string]any{"phase": "Failed", "containerStatuses": []any{
		map[string]any{"state": map[string]any{"terminated": map[string]any{"exitCode": int64(3)}}},
		map[string]any{"state": map[string]any{}},
	}}
	if diff := cmp.Diff(wantStatus, kept.Object["status"]); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if _, ok := kept.Object["spec"]; ok {
		t.Errorf("spec kept: %v", kept.Object["spec"])
	}
	if kept.GetName() != "at-1-abcd" || kept.GetLabels()["cnat.reconcilekit.dev/at-uid"] != "a1" || len(kept.GetOwnerReferences()) != 1 {
		t.Errorf("metadata not kept whole: %v", kept.Object["metadata"])
	}
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	if got, err := transform(other); err != nil || got != other {
		t.Errorf("another kind: %v, %v; want it unchanged", got, err)
	}
}

// TestIsPartial is false for whole objects, nil ones and objects without
// managedFields.
func TestIsPartial(t *testing.T) {
	for _, obj := range []metav1.Object{nil, &corev1.Pod{}, finishedPod(), &unstructured.Unstructured{Object: map[string]any{}}} {
		if diet.IsPartial(obj) {
			t.Errorf("IsPartial(%v) = true", obj)
		}
	}
	if !errors.Is(diet.ErrPartial, diet.ErrPartial) {
		t.Error("ErrPartial is not itself")
	}
}
