package ownership_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

func exampleScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = testapi.AddToScheme(s)
	return s
}

func ExampleSetController() {
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", UID: "uid-1"}}

	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db-config"}}
	fmt.Println(ownership.SetController(owner, child, scheme), ownership.IsControlledBy(child, owner))

	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db-config"}}
	err := ownership.SetController(owner, elsewhere, scheme)
	var crossNS *ownership.CrossNamespaceError
	class, _ := rkerrors.Classify(err) // no retry can fix it
	fmt.Println(errors.As(err, &crossNS), crossNS.Object.Namespace, class)

	clusterWide := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "db-reader"}}
	err = ownership.SetController(owner, clusterWide, scheme)
	var clusterScoped *ownership.ClusterScopedError
	fmt.Println(errors.As(err, &clusterScoped))

	rival := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rival", UID: "uid-2"}}
	err = ownership.SetController(rival, child, scheme)
	var owned *ownership.AlreadyOwnedError
	class, _ = rkerrors.Classify(err) // the rival may let go: retry with backoff
	fmt.Println(errors.As(err, &owned), owned.Owner.Name, class)
	// Output:
	// <nil> true
	// true team-b permanent
	// true
	// true db transient
}

func ExamplePrune() {
	ctx := context.Background()
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "uid-1"}}
	other := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "uid-2"}}
	var objs []client.Object
	for _, c := range []struct {
		name  string
		owner *testapi.Widget
	}{{"shard-0", owner}, {"shard-1", owner}, {"shard-2", owner}, {"not-mine", other}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: c.name}}
		_ = ownership.SetController(c.owner, cm, scheme)
		objs = append(objs, cm)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()

	// The owner now wants one shard only. This client has no owner index
	// (ownership.IndexOwner): Prune finds that out and lists the namespace.
	desired := map[string]bool{"shard-0": true}
	deleted, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{},
		func(o client.Object) bool { return desired[o.GetName()] })
	for _, d := range deleted {
		fmt.Println("pruned", d.GetName())
	}
	fmt.Println(err)

	left := &corev1.ConfigMapList{}
	_ = c.List(ctx, left)
	for _, cm := range left.Items {
		fmt.Println("left", cm.Name)
	}
	// Output:
	// pruned shard-1
	// pruned shard-2
	// <nil>
	// left not-mine
	// left shard-0
}

func ExamplePruneListed() {
	ctx := context.Background()
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "uid-1"}}
	var objs []client.Object
	for _, name := range []string{"run-1", "run-2", "run-3"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		_ = ownership.SetController(owner, cm, scheme)
		objs = append(objs, cm)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.ConfigMap{}, ownership.IndexField, ownership.ControllerUIDs).Build()

	// The reconciler lists its runs once, to report how many there are...
	runs := &corev1.ConfigMapList{}
	if err := ownership.ListOwned(ctx, c, owner, runs); err != nil {
		fmt.Println(err)
	}
	fmt.Println("runs:", len(runs.Items))

	// ...and keeps the last two of them without listing again.
	deleted, err := ownership.PruneListed(ctx, c, owner, runs,
		func(o client.Object) bool { return o.GetName() >= "run-2" })
	for _, d := range deleted {
		fmt.Println("pruned", d.GetName())
	}
	fmt.Println(err)
	// Output:
	// runs: 3
	// pruned run-1
	// <nil>
}

func ExampleInAllNamespaces() {
	ctx := context.Background()
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", UID: "uid-1"}}
	// Grants in other namespaces: owner references cannot cross
	// namespaces, links can.
	var objs []client.Object
	for _, ns := range []string{"team-b", "team-c"} {
		grant := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-grant"}}
		_ = ownership.SetLink(owner, grant, scheme)
		objs = append(objs, grant)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()

	// team-c no longer gets a grant.
	deleted, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{},
		func(o client.Object) bool { return o.GetNamespace() == "team-b" },
		ownership.WithListOptions(ownership.LinkedTo(owner)), ownership.InAllNamespaces())
	for _, d := range deleted {
		fmt.Println("pruned", d.GetNamespace()+"/"+d.GetName())
	}
	fmt.Println(err)
	// Output:
	// pruned team-c/db-grant
	// <nil>
}

func ExampleListOwned() {
	ctx := context.Background()
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "uid-1"}}
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine"}}
	_ = ownership.SetController(owner, mine, scheme)
	unowned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unowned"}}

	// With a manager: ownership.IndexOwner(ctx, mgr.GetFieldIndexer(), &corev1.ConfigMap{}).
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mine, unowned).
		WithIndex(&corev1.ConfigMap{}, ownership.IndexField, ownership.ControllerUIDs).Build()

	list := &corev1.ConfigMapList{}
	err := ownership.ListOwned(ctx, c, owner, list)
	fmt.Println(len(list.Items), list.Items[0].Name, err)
	// Output:
	// 1 mine <nil>
}

func ExampleEnqueueLinkedOwner() {
	scheme := exampleScheme()
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", UID: "uid-1"}}
	// A cluster-scoped child cannot carry an owner reference to a
	// namespaced owner; a link can.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "db-reader"}}
	if err := ownership.SetLink(owner, role, scheme); err != nil {
		fmt.Println(err)
	}
	fmt.Println(role.Annotations[ownership.LinkAnnotation])

	// In a controller: Watches(&rbacv1.ClusterRole{}, ownership.EnqueueLinkedOwner(widgetKind)).
	h := ownership.EnqueueLinkedOwner(testapi.GroupVersion.WithKind("Widget").GroupKind())
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: role, ObjectNew: role}, q)
	req, _ := q.Get()
	fmt.Println(q.Len(), req)
	// Output:
	// testing.reconcilekit.io/v1/Widget/team-a/db
	// 0 team-a/db
}
