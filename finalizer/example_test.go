package finalizer_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

func exampleClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	if err := testapi.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func ExampleWriter_Add() {
	ctx := context.Background()
	c := exampleClient(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}})
	fw := finalizer.NewWriter(c, "widget-controller")

	w := &testapi.Widget{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "w"}, w)
	for range 2 {
		changed, err := fw.Add(ctx, w, "example.com/cleanup")
		fmt.Println(changed, err, w.Finalizers)
	}
	// Output:
	// true <nil> [example.com/cleanup]
	// false <nil> [example.com/cleanup]
}

// The field owner NewWriter takes names the operator in
// metadata.managedFields for the finalizers it adds and removes. A Writer
// built without one writes nothing and its error is permanent, on the first
// reconcile rather than on the deletion that the finalizer would then hold
// up.
func ExampleNewWriter() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = testapi.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithReturnManagedFields().
		WithObjects(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}}).Build()
	w := &testapi.Widget{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "w"}, w)

	_, err := finalizer.NewWriter(c, "").Add(ctx, w, "example.com/cleanup")
	class, _ := rkerrors.Classify(err)
	fmt.Println(errors.Is(err, rkerrors.ErrNoFieldOwner), class, w.Finalizers)

	changed, err := finalizer.NewWriter(c, "widget-controller").Add(ctx, w, "example.com/cleanup")
	fmt.Println(changed, err, w.Finalizers)
	for _, mf := range w.ManagedFields {
		fmt.Println(mf.Manager, mf.Operation)
	}
	// Output:
	// true permanent []
	// true <nil> [example.com/cleanup]
	// widget-controller Update
}

// deleteRecord stands for the cleanup of something outside the cluster.
func deleteRecord(_ context.Context, hostname string) error {
	fmt.Println("deleting the DNS record of", hostname)
	return nil
}

// A Registry typed by the object it finalizes: the cleanup gets a
// *corev1.ConfigMap, not a client.Object to assert. This is the package
// documentation's snippet, run.
func ExampleRegistry() {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "default", Name: "site"}
	c := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data:       map[string]string{"hostname": "shop.example.com"},
	}).Build()

	w := finalizer.NewWriter(c, "site-controller")
	var finalizers finalizer.Registry[*corev1.ConfigMap]
	if err := finalizers.Register("example.com/dns-record", finalizer.Func[*corev1.ConfigMap](
		func(ctx context.Context, cm *corev1.ConfigMap) error {
			return deleteRecord(ctx, cm.Data["hostname"])
		})); err != nil {
		panic(err)
	}

	// The reconciler's normal path.
	cm := &corev1.ConfigMap{}
	_ = c.Get(ctx, key, cm)
	changed, err := finalizers.AddMissing(ctx, w, cm)
	fmt.Println("added:", changed, err, cm.Finalizers)

	// The user deletes the object; the reconciler's deletion path.
	_ = c.Delete(ctx, cm)
	_ = c.Get(ctx, key, cm)
	res, err := finalizers.Finalize(ctx, w, cm)
	fmt.Println("removed:", res.Removed, "done:", res.Done(), err)

	err = c.Get(ctx, key, cm)
	fmt.Println("gone:", apierrors.IsNotFound(err))
	// Output:
	// added: true <nil> [example.com/dns-record]
	// deleting the DNS record of shop.example.com
	// removed: [example.com/dns-record] done: true <nil>
	// gone: true
}

// Cleanups run in registration order: the DNS record goes before the
// address it points to is released. Registry[client.Object] serves any type.
func ExampleRegistry_order() {
	ctx := context.Background()
	c := exampleClient(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}})
	key := client.ObjectKey{Namespace: "default", Name: "w"}

	var registry finalizer.Registry[client.Object]
	for _, name := range []string{"example.com/dns-record", "example.com/ip-address"} {
		_ = registry.Register(name, finalizer.Func[client.Object](func(ctx context.Context, obj client.Object) error {
			fmt.Println("cleaning up", name)
			return nil
		}))
	}
	w := &testapi.Widget{}
	_ = c.Get(ctx, key, w)
	fw := finalizer.NewWriter(c, "widget-controller")
	_, _ = registry.AddMissing(ctx, fw, w)
	_ = c.Delete(ctx, w)
	_ = c.Get(ctx, key, w)
	res, err := registry.Finalize(ctx, fw, w)
	fmt.Println("removed:", res.Removed, err)
	// Output:
	// cleaning up example.com/dns-record
	// cleaning up example.com/ip-address
	// removed: [example.com/dns-record example.com/ip-address] <nil>
}

func ExampleCleanupError() {
	ctx := context.Background()
	c := exampleClient(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "w", Finalizers: []string{"example.com/bucket"}}})
	key := client.ObjectKey{Namespace: "default", Name: "w"}
	w := &testapi.Widget{}
	_ = c.Get(ctx, key, w)
	_ = c.Delete(ctx, w)
	_ = c.Get(ctx, key, w)

	errBusy := errors.New("bucket is not empty")
	var registry finalizer.Registry[*testapi.Widget]
	_ = registry.Register("example.com/bucket", finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		return errBusy
	}))
	res, err := registry.Finalize(ctx, finalizer.NewWriter(c, "widget-controller"), w)

	var cleanupErr *finalizer.CleanupError
	fmt.Println(errors.As(err, &cleanupErr), cleanupErr.Name, errors.Is(err, errBusy))
	fmt.Println("remaining:", res.Remaining)
	// Output:
	// true example.com/bucket true
	// remaining: [example.com/bucket]
}
