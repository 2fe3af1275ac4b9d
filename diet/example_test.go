package diet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/diet"
)

// A manager's caches on the diet, Pods watched for their phase and exit
// code only: what the cache keeps of a Pod the API server sent whole.
func Example() {
	pods, err := diet.Fields(&corev1.Pod{}, "status.phase", "status.containerStatuses.state.terminated.exitCode")
	if err != nil {
		panic(err)
	}
	opts, err := diet.CacheOptions(cache.Options{
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: pods}},
	}, "at-controller")
	if err != nil {
		panic(err)
	}
	// ctrl.NewManager(cfg, ctrl.Options{Cache: opts}); here, what the
	// Pods' transform does to one Pod:
	for obj, bo := range opts.ByObject {
		if _, ok := obj.(*corev1.Pod); !ok {
			continue
		}
		kept, _ := bo.Transform(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello-1a2b3c4d", Labels: map[string]string{"app": "hello"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "at-controller"}, {Manager: "kubelet", Subresource: "status"}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "command", Image: "busybox:1.36"}}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded, HostIP: "10.0.0.7", ContainerStatuses: []corev1.ContainerStatus{{
				Name: "command", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}},
		})
		pod := kept.(*corev1.Pod)
		fmt.Println(pod.Name, pod.Labels, pod.Status.Phase, pod.Status.ContainerStatuses[0].State.Terminated.ExitCode)
		fmt.Println("containers:", len(pod.Spec.Containers), "hostIP:", pod.Status.HostIP == "", "part:", diet.IsPartial(pod))
	}
	// Output:
	// hello-1a2b3c4d map[app:hello] Succeeded 0
	// containers: 0 hostIP: true part: true
}

// What the cache keeps of an object's managedFields: the operator's own
// entry; the creator's and the status entries go.
func ExampleManagedFields() {
	transform, err := diet.ManagedFields("at-controller")
	if err != nil {
		panic(err)
	}
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-create", Operation: "Update", FieldsV1: raw(`{"f:spec":{"f:nodeName":{}}}`)},
		{Manager: "at-controller", Operation: "Update", FieldsV1: raw(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{}}}`)},
		{Manager: "at-controller", Operation: "Update", Subresource: "status", FieldsV1: raw(`{"f:status":{"f:phase":{}}}`)},
		{Manager: "kubelet", Operation: "Update", Subresource: "status", FieldsV1: raw(`{"f:status":{"f:hostIP":{}}}`)},
	}}}
	kept, _ := transform(pod)
	for _, e := range kept.(*corev1.Pod).ManagedFields {
		fmt.Println(e.Manager, e.Operation, e.Subresource)
	}
	// Output:
	// at-controller Update
}

// Strings shared: two Pods decoded apart each bring their own copy of their
// namespace and of their condition's type; after Intern, the second holds
// the first's. A cache that is not on the whole diet can run it alone.
func ExampleIntern() {
	opts := cache.Options{DefaultTransform: diet.Intern()}
	decode := func(name string) *corev1.Pod {
		pod := &corev1.Pod{}
		doc := `{"metadata":{"name":"` + name + `","namespace":"team-a"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`
		if err := json.Unmarshal([]byte(doc), pod); err != nil {
			panic(err)
		}
		return pod
	}
	a, b := decode("a"), decode("b")
	sameCopy := func() bool { return unsafe.StringData(a.Namespace) == unsafe.StringData(b.Namespace) }
	fmt.Println("one copy of the namespace before:", sameCopy())
	for _, pod := range []*corev1.Pod{a, b} {
		if _, err := opts.DefaultTransform(pod); err != nil {
			panic(err)
		}
	}
	fmt.Println("one copy of the namespace after:", sameCopy())
	fmt.Println(b.Namespace, b.Name, b.Status.Conditions[0].Type)
	// Output:
	// one copy of the namespace before: false
	// one copy of the namespace after: true
	// team-a b Ready
}

// Parts stored compact: an informer built with the options Compact returns
// (as a manager's cache builds its own) holds each Pod part compact, and
// hands out the Pod's part as the transform made it.
func ExampleCompact() {
	pods, err := diet.Fields(&corev1.Pod{}, "status.phase")
	if err != nil {
		panic(err)
	}
	opts := diet.Compact(cache.Options{})
	// A list of one Pod, as the API server would send it.
	lw := listThenWatch{&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Pod{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-1a2b3c4d", ResourceVersion: "1"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "command", Image: "busybox:1.36"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodSucceeded, HostIP: "10.0.0.7"},
			}}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}}
	informer := opts.NewInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	if err := informer.SetTransform(pods); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.RunWithContext(ctx)
	toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced)

	obj, _, _ := informer.GetStore().GetByKey("default/hello-1a2b3c4d")
	pod := obj.(*corev1.Pod)
	fmt.Println(pod.Name, pod.Status.Phase, "containers:", len(pod.Spec.Containers), "part:", diet.IsPartial(pod))
	// Output:
	// hello-1a2b3c4d Succeeded containers: 0 part: true
}

// listThenWatch is a ListWatch a reflector lists and then watches (a
// fake: it cannot stream its list as watch events).
type listThenWatch struct{ *toolscache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
