package testenv_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/internal/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
	})
}

// TestRealAPIServerRoundTrip proves the harness talks to a real
// kube-apiserver: the server applies the CRD's defaults, serves the status
// subresource separately from the main resource, bumps resourceVersion on
// every write, and deletes.
func TestRealAPIServerRoundTrip(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)

	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "hello"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}

	var got testapi.Widget
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %v, want the CRD default 1 applied by the server", got.Spec.Replicas)
	}
	if got.Generation != 1 || got.UID == "" {
		t.Errorf("generation=%d uid=%q, want 1 and a server-assigned UID", got.Generation, got.UID)
	}

	// A status patch changes status only, and does not bump generation.
	before := got.DeepCopy()
	got.Status.Phase = "Running"
	got.Spec.Replicas = ptr.To[int32](5) // ignored by the status subresource
	if err := c.Status().Patch(ctx, &got, client.MergeFrom(before)); err != nil {
		t.Fatalf("status patch: %v", err)
	}
	var after testapi.Widget
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &after); err != nil {
		t.Fatalf("get after status patch: %v", err)
	}
	if after.Status.Phase != "Running" {
		t.Errorf("status.phase = %q, want Running", after.Status.Phase)
	}
	if *after.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %d after a status patch, want 1: the status subresource must not write spec", *after.Spec.Replicas)
	}
	if after.Generation != 1 {
		t.Errorf("generation = %d after a status-only write, want 1", after.Generation)
	}
	if after.ResourceVersion == before.ResourceVersion {
		t.Errorf("resourceVersion unchanged after a write")
	}

	if err := c.Delete(ctx, &after); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &after); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: err = %v, want NotFound", err)
	}
}
