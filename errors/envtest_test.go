package errors_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}

// TestClassifyRealAPIServerErrors gets real error responses from a real
// kube-apiserver and proves they classify as the table in doc.go says: a
// stale update is a 409 conflict, an object the CRD's validation rejects is
// a 422 permanent error, a duplicate create is a conflict, a missing object
// is transient.
func TestClassifyRealAPIServerErrors(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)

	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}
	stale := w.DeepCopy()
	w.Spec.Message = "first writer"
	if err := c.Update(ctx, w); err != nil {
		t.Fatalf("update: %v", err)
	}
	stale.Spec.Message = "second writer, stale resourceVersion"
	conflictErr := c.Update(ctx, stale)

	invalidErr := c.Create(ctx, &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "negative"},
		Spec:       testapi.WidgetSpec{Replicas: ptr.To[int32](-1)},
	})
	existsErr := c.Create(ctx, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}})
	notFoundErr := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "missing"}, &testapi.Widget{})

	tests := []struct {
		name string
		err  error
		code int32
		want outcome
	}{
		{"stale update", conflictErr, 409, outcome{errors.ClassConflict, 0, "Conflict"}},
		{"replicas -1 rejected by the CRD schema", invalidErr, 422, outcome{errors.ClassPermanent, 0, "Invalid"}},
		{"create of an existing name", existsErr, 409, outcome{errors.ClassConflict, 0, "AlreadyExists"}},
		{"get of a missing object", notFoundErr, 404, outcome{errors.ClassTransient, 0, "NotFound"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var se *apierrors.StatusError
			if !errors.As(tt.err, &se) || se.ErrStatus.Code != tt.code {
				t.Fatalf("the server returned %v; want an API status error with code %d", tt.err, tt.code)
			}
			if diff := cmp.Diff(tt.want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
			// Wrapped as a reconciler would, the verdict is the same.
			if diff := cmp.Diff(tt.want, classify(errors.Errorf("reconcile widget: %w", tt.err))); diff != "" {
				t.Errorf("wrapped (-want +got):\n%s", diff)
			}
			// The message is stable: nothing in it changes between attempts.
			if m := errors.Message(tt.err); m != errors.Message(errors.Errorf("%w", tt.err)) || m == "" {
				t.Errorf("Message = %q", m)
			}
		})
	}
}
