package diet

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fullPod has a field of every kind a compact part must give back: zero
// values behind pointers and in lists, empty non-nil lists and maps,
// quantities, times, int-or-strings, byte-free strings.
func fullPod() *corev1.Pod {
	now := metav1.Date(2026, 11, 26, 6, 30, 0, 0, metav1.Now().Location())
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "at-1-abcd", UID: "u1", ResourceVersion: "42", Generation: 1,
			CreationTimestamp: now, GenerateName: "at-",
			Labels:          map[string]string{"cnat.reconcilekit.dev/at-uid": "a1", "empty": ""},
			Annotations:     map[string]string{"note": "n"},
			Finalizers:      []string{"f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cnat.reconcilekit.dev/v1alpha1", Kind: "At", Name: "at-1", UID: "a1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "app-controller", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			EnableServiceLinks:            ptr.To(false),
			NodeSelector:                  map[string]string{},
			Containers: []corev1.Container{{Name: "command", Image: "busybox:1.36", Command: []string{"/bin/sh", "-c", ""},
				Args: []string{},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"),
					corev1.ResourceMemory: resource.MustParse("64Mi")}},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}, {}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(0)}}},
			}},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodSucceeded,
			StartTime: &now,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "command", Started: ptr.To(false), State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: now}}},
				{Name: "second", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}},
				{},
			},
		},
	}
}

// compacted returns fullPod's part keeping paths, and what i stores of it.
func compacted(t *testing.T, i *compactInformer, paths ...string) (kept, stored any) {
	t.Helper()
	fields, err := Fields(&corev1.Pod{}, paths...)
	if err != nil {
		t.Fatal(err)
	}
	if kept, err = fields(fullPod()); err != nil {
		t.Fatal(err)
	}
	if stored, err = i.compact(kept); err != nil {
		t.Fatal(err)
	}
	return kept, stored
}

// TestCompactPartsAreHandedOutAsTheyWereKept: a part a Fields transform
// leaves, stored compact, is built back equal to it (every field of every
// kind, zero values behind pointers and in lists included, the part's
// entry in managedFields); a whole object and an object of another type
// are stored as they come.
func TestCompactPartsAreHandedOutAsTheyWereKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"phase and exit code", []string{"status.phase", "status.containerStatuses.state.terminated.exitCode"}},
		{"metadata only", nil},
		{"everything", []string{"spec", "status"}},
		{"through lists", []string{"spec.containers.ports.containerPort", "spec.containers.resources", "status.containerStatuses.started"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := &compactInformer{}
			kept, stored := compacted(t, i, tc.paths...)
			p, ok := stored.(*part)
			if !ok {
				t.Fatalf("a part is stored as %T", stored)
			}
			if strings.Contains(string(p.rest), "managedFields") || p.name != "at-1-abcd" || p.namespace != "ns" || p.resourceVersion != "42" || p.uid != "u1" {
				t.Errorf("a compact part holds %+v, %s: want its names, resourceVersion and UID, and no managedFields", p, p.rest)
			}
			if m, err := meta.Accessor(p); err != nil || m.GetName() != "at-1-abcd" || m.GetNamespace() != "ns" || m.GetResourceVersion() != "42" {
				t.Errorf("meta.Accessor of a compact part: %v, %v", m, err)
			}
			got := expand(stored)
			if diff := cmp.Diff(kept, got); diff != "" {
				t.Errorf("the part handed out differs from the part kept (-kept +handed out):\n%s", diff)
			}
			// Each read is an object of its own.
			again := expand(stored).(*corev1.Pod)
			again.Labels["changed"] = "yes"
			again.OwnerReferences[0].Name = "changed"
			if diff := cmp.Diff(kept, expand(stored)); diff != "" {
				t.Errorf("changing what a read returned changed the cache (-kept +now):\n%s", diff)
			}
			// Stored again (a transform runs again on a relist): the same.
			if twice, err := i.compact(stored); err != nil || twice != stored {
				t.Errorf("compacting a compact part gave %v, %v", twice, err)
			}
		})
	}
	i := &compactInformer{}
	for _, in := range []any{fullPod(), &corev1.ConfigMap{}, "not an object"} {
		if out, err := i.compact(in); err != nil || !cmp.Equal(out, in) {
			t.Errorf("compact(%T) = %T, %v: want it stored as it came", in, out, err)
		}
	}
}

// TestCompactHandlersAndIndexesAreGivenParts: an event handler, an index
// function and the informer's indexer see the part of the object's own
// type, never the compact form (a tombstone's object too).
func TestCompactHandlersAndIndexesAreGivenParts(t *testing.T) {
	kept, stored := compacted(t, &compactInformer{}, "status.phase")
	var seen []any
	h := expandingHandler{toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen = append(seen, obj) },
		UpdateFunc: func(old, obj any) { seen = append(seen, old, obj) },
		DeleteFunc: func(obj any) { seen = append(seen, obj) },
	}}
	h.OnAdd(stored, true)
	h.OnUpdate(stored, stored)
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/at-1-abcd", Obj: stored})
	for n, obj := range seen {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*corev1.Pod); !ok || !IsPartial(pod) || pod.Status.Phase != corev1.PodSucceeded {
			t.Errorf("event %d gave the handler %T %+v, want the Pod's part", n, obj, obj)
		}
	}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	x := expandingIndexer{indexer}
	if err := x.AddIndexers(toolscache.Indexers{"phase": func(obj any) ([]string, error) {
		return []string{string(obj.(*corev1.Pod).Status.Phase)}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Add(stored); err != nil {
		t.Fatal(err)
	}
	byIndex, err := x.ByIndex("phase", string(corev1.PodSucceeded))
	if err != nil || len(byIndex) != 1 {
		t.Fatalf("ByIndex = %v, %v", byIndex, err)
	}
	byKey, ok, err := x.GetByKey("ns/at-1-abcd")
	if err != nil || !ok {
		t.Fatalf("GetByKey: %v, %v", ok, err)
	}
	for _, obj := range append(append(byIndex, x.List()...), byKey) {
		if diff := cmp.Diff(kept, obj); diff != "" {
			t.Errorf("the indexer handed out (-kept +got):\n%s", diff)
		}
	}
}

// FuzzCompactPartsComeBackAsTheyWereKept: whatever the values of a Pod's
// fields (strings, numbers, zero values behind pointers, quantities), its
// part comes back from the compact form equal to it. Strings are held as
// JSON holds them, so only valid UTF-8 is tried (what the API server's
// JSON carries).
func FuzzCompactPartsComeBackAsTheyWereKept(f *testing.F) {
	f.Add("Succeeded", int32(0), "app", "web", "250m", int64(0), true, "")
	f.Add("", int32(-3), "", "", "1Gi", int64(30), false, "exit \x00 code")
	f.Fuzz(func(t *testing.T, phase string, exit int32, key, value, quantity string, grace int64, started bool, message string) {
		for _, s := range []string{phase, key, value, message} {
			if !utf8.ValidString(s) {
				t.Skip()
			}
		}
		q, err := resource.ParseQuantity(quantity)
		if err != nil {
			t.Skip()
		}
		pod := fullPod()
		pod.Labels[key] = value
		pod.Status.Phase = corev1.PodPhase(phase)
		pod.Status.Message = message
		pod.Spec.TerminationGracePeriodSeconds = &grace
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q}
		pod.Status.ContainerStatuses[0].Started = &started
		pod.Status.ContainerStatuses[0].State.Terminated.ExitCode = exit
		pod.Status.ContainerStatuses[0].State.Terminated.Message = message
		fields, err := Fields(&corev1.Pod{}, "spec", "status")
		if err != nil {
			t.Fatal(err)
		}
		kept, err := fields(pod)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := (&compactInformer{}).compact(kept)
		if err != nil {
			t.Fatal(err)
		}
		// A quantity compares by its value: its JSON is its canonical form.
		if diff := cmp.Diff(kept, expand(stored), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("(-kept +handed out):\n%s", diff)
		}
	})
}
