package ownership_test

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/internal/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
	})
}

// requests counts the requests a client sends, by verb.
type requests struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *requests) add(verb string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[verb]++
}

// snapshot returns the counts so far and starts again from zero.
func (r *requests) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.counts
	r.counts = nil
	if got == nil {
		got = map[string]int{}
	}
	return got
}

// countingClient returns a client for the test's API server that counts
// every request it sends.
func countingClient(t testing.TB) (client.Client, *requests) {
	t.Helper()
	env.Require(t)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return withCounting(c)
}

func withCounting(c client.WithWatch) (client.Client, *requests) {
	r := &requests{}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			r.add("get")
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			r.add("list")
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			r.add("create")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			r.add("update")
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			r.add("patch")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			r.add("delete")
			return c.Delete(ctx, obj, opts...)
		},
	}), r
}
