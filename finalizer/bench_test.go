package finalizer_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

func benchWidget(b *testing.B) (client.Client, *testenv.Requests, *testapi.Widget) {
	b.Helper()
	base := fake.NewClientBuilder().WithScheme(env.Scheme).
		WithObjects(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w",
			Finalizers: []string{keepFinalizer, dnsFinalizer, bucketFinalizer}}}).Build()
	c, reqs := testenv.WithCounting(base)
	w := &testapi.Widget{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "w"}, w); err != nil {
		b.Fatal(err)
	}
	reqs.Snapshot()
	return c, reqs, w
}

// BenchmarkAddNoOp measures the path every reconcile of a converged
// object takes: the finalizer is present, so no request is made.
func BenchmarkAddNoOp(b *testing.B) {
	c, reqs, w := benchWidget(b)
	ctx := context.Background()
	for b.Loop() {
		if changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, bucketFinalizer); changed || err != nil {
			b.Fatal(changed, err)
		}
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		b.Fatalf("requests on the no-op path: %v", got)
	}
}

// BenchmarkRegistryAddAllNoOp is the same for a Registry of two finalizers.
func BenchmarkRegistryAddAllNoOp(b *testing.B) {
	c, reqs, w := benchWidget(b)
	ctx := context.Background()
	var s finalizer.Registry[client.Object]
	for _, n := range []string{dnsFinalizer, bucketFinalizer} {
		if err := s.Register(n, finalizer.Func[client.Object](func(context.Context, client.Object) error { return nil })); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if changed, err := s.AddMissing(ctx, finalizer.NewWriter(c, testOwner), w); changed || err != nil {
			b.Fatal(changed, err)
		}
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		b.Fatalf("requests on the no-op path: %v", got)
	}
}

// BenchmarkBaselineContainsFinalizer is the least any check can cost:
// controllerutil.ContainsFinalizer, no validation, no client.
func BenchmarkBaselineContainsFinalizer(b *testing.B) {
	_, _, w := benchWidget(b)
	for b.Loop() {
		if !controllerutil.ContainsFinalizer(w, bucketFinalizer) {
			b.Fatal("missing")
		}
	}
}

// BenchmarkBaselineUpdateEveryTime is the hand-written pattern that writes
// on every reconcile, against the in-memory fake client (a real API server
// adds a network round trip on top).
func BenchmarkBaselineUpdateEveryTime(b *testing.B) {
	c, _, w := benchWidget(b)
	ctx := context.Background()
	for b.Loop() {
		controllerutil.AddFinalizer(w, bucketFinalizer)
		if err := c.Update(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
}
