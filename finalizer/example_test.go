package finalizer_test

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

func ExampleEnsure() {
	ctx := context.Background()
	c := exampleClient(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}})

	w := &testapi.Widget{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "w"}, w)
	for range 2 {
		changed, err := finalizer.Ensure(ctx, c, w, "example.com/cleanup")
		fmt.Println(changed, err, w.Finalizers)
	}
	// Output:
	// true <nil> [example.com/cleanup]
	// false <nil> [example.com/cleanup]
}

func ExampleSet() {
	ctx := context.Background()
	c := exampleClient(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"}})
	key := client.ObjectKey{Namespace: "default", Name: "w"}

	// Cleanups run in registration order: the DNS record goes before the
	// address it points to is released.
	var set finalizer.Set
	for _, name := range []string{"example.com/dns-record", "example.com/ip-address"} {
		_ = set.Register(name, finalizer.Func(func(ctx context.Context, obj client.Object) error {
			fmt.Println("cleaning up", name)
			return nil
		}))
	}

	// The reconciler's normal path.
	w := &testapi.Widget{}
	_ = c.Get(ctx, key, w)
	changed, err := set.EnsureAll(ctx, c, w)
	fmt.Println("added:", changed, err, w.Finalizers)

	// The user deletes the object; the reconciler's deletion path.
	_ = c.Delete(ctx, w)
	_ = c.Get(ctx, key, w)
	res, err := set.Run(ctx, c, w)
	fmt.Println("removed:", res.Removed, "done:", res.Done(), err)

	err = c.Get(ctx, key, w)
	fmt.Println("gone:", apierrors.IsNotFound(err))
	// Output:
	// added: true <nil> [example.com/dns-record example.com/ip-address]
	// cleaning up example.com/dns-record
	// cleaning up example.com/ip-address
	// removed: [example.com/dns-record example.com/ip-address] done: true <nil>
	// gone: true
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
	var set finalizer.Set
	_ = set.Register("example.com/bucket", finalizer.Func(func(context.Context, client.Object) error {
		return errBusy
	}))
	res, err := set.Run(ctx, c, w)

	var cleanupErr *finalizer.CleanupError
	fmt.Println(errors.As(err, &cleanupErr), cleanupErr.Name, errors.Is(err, errBusy))
	fmt.Println("remaining:", res.Remaining)
	// Output:
	// true example.com/bucket true
	// remaining: [example.com/bucket]
}
