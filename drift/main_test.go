package drift_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// testOwner is the field owner of the tests' writes.
const testOwner = "drift-test"

// env is the package's one control plane. Every envtest test in
// drift_test uses it.
var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		CRDs:              []*apiextensionsv1.CustomResourceDefinition{gadgetCRD},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}

// writes counts the write requests a client sends and keeps patch bodies.
type writes struct {
	mu      sync.Mutex
	creates int
	patches int
	updates int
	applies int
	deletes int
	bodies  []map[string]any
}

func (w *writes) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.creates + w.patches + w.updates + w.applies + w.deletes
}

func (w *writes) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.creates, w.patches, w.updates, w.applies, w.deletes, w.bodies = 0, 0, 0, 0, 0, nil
}

// countingClient returns a client to the test API server that counts writes.
func countingClient(t *testing.T) (client.Client, *writes) {
	t.Helper()
	env.Require(t)
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &writes{}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.mu.Lock()
			w.creates++
			w.mu.Unlock()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.mu.Lock()
			w.updates++
			w.mu.Unlock()
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.mu.Lock()
			w.deletes++
			w.mu.Unlock()
			return c.Delete(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				t.Errorf("patch body is not a JSON object: %s", data)
			}
			w.mu.Lock()
			w.patches++
			w.bodies = append(w.bodies, body)
			w.mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.mu.Lock()
			w.applies++
			w.mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.mu.Lock()
			w.updates++
			w.mu.Unlock()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.mu.Lock()
			w.patches++
			w.mu.Unlock()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return c, w
}

// withoutDirectives drops strategic-merge-patch ordering directives
// ($setElementOrder/...), which reorder nothing and set no field.
func withoutDirectives(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if len(k) > 0 && k[0] == '$' {
				continue
			}
			out[k] = withoutDirectives(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDirectives(e)
		}
		return out
	}
	return v
}
