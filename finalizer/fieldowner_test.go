package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// TestEveryCallWithoutAFieldOwnerFailsPermanentlyAndSendsNothing:
// forgetting WithFieldOwner is never silent. Every call returns
// ErrNoFieldOwner, classed permanent (a controller-runtime terminal error),
// sends no request and runs no cleanup, also when it would have had
// nothing to write: the mistake shows on the first reconcile, not on the
// deletion its finalizer would then hold up.
func TestEveryCallWithoutAFieldOwnerFailsPermanentlyAndSendsNothing(t *testing.T) {
	var cleanups int
	registry := &finalizer.Registry[*testapi.Widget]{}
	if err := registry.Register(fooFinalizer, finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		cleanups++
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// finalizers the Widget has; deleting deletes it first.
		finalizers []string
		deleting   bool
		call       func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error
	}{
		{name: "Add, missing", call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := finalizer.Add(ctx, c, w, fooFinalizer, opts...)
			return err
		}},
		{name: "Add, present", finalizers: []string{fooFinalizer}, call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := finalizer.Add(ctx, c, w, fooFinalizer, opts...)
			return err
		}},
		{name: "Remove, present", finalizers: []string{fooFinalizer}, call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := finalizer.Remove(ctx, c, w, fooFinalizer, opts...)
			return err
		}},
		{name: "Remove, absent", call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := finalizer.Remove(ctx, c, w, fooFinalizer, opts...)
			return err
		}},
		{name: "Registry.AddAll", call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := registry.AddAll(ctx, c, w, opts...)
			return err
		}},
		{name: "Registry.Run", finalizers: []string{fooFinalizer}, deleting: true, call: func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
			_, err := registry.Run(ctx, c, w, opts...)
			return err
		}},
	}
	for _, tt := range tests {
		for i, opts := range [][]finalizer.Option{nil, {finalizer.WithFieldOwner("")}} {
			t.Run(tt.name+"/"+[]string{"no option", "an empty name"}[i], func(t *testing.T) {
				c, reqs := countingClient(t)
				w := newWidget(t, c, env.Namespace(t), "w", tt.finalizers...)
				if tt.deleting {
					deleted(t, c, w)
				}
				reqs.Snapshot()
				cleanups = 0
				err := tt.call(t.Context(), c, w, opts...)
				if !errors.Is(err, finalizer.ErrNoFieldOwner) || !strings.Contains(err.Error(), "finalizer.WithFieldOwner") {
					t.Fatalf("err = %v, want ErrNoFieldOwner saying how to fix it", err)
				}
				if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent || !errors.Is(err, crreconcile.TerminalError(nil)) {
					t.Errorf("class %v, terminal %v; want permanent and terminal", class, errors.Is(err, crreconcile.TerminalError(nil)))
				}
				if got := reqs.Snapshot(); len(got) != 0 || cleanups != 0 {
					t.Errorf("requests %v and %d cleanups, want none", got, cleanups)
				}
			})
		}
	}
}

// TestPatchesCarryTheFieldOwner: the finalizer patches are recorded in
// managedFields under the name WithFieldOwner gives, not under the client's
// default manager (here "manager", every kubebuilder binary's name).
func TestPatchesCarryTheFieldOwner(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "manager"
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	w := newWidget(t, env.Client(t), env.Namespace(t), "w")
	owner := finalizer.WithFieldOwner("widget-operator")
	if _, err := finalizer.Add(ctx, c, w, fooFinalizer, owner); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Add(ctx, c, w, barFinalizer, owner); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Remove(ctx, c, w, fooFinalizer, owner); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range w.ManagedFields {
		if strings.Contains(mf.FieldsV1.GetRawString(), "f:finalizers") {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
	}
	if diff := cmp.Diff([]string{"widget-operator/Update"}, managers); diff != "" || slices.ContainsFunc(w.ManagedFields, func(mf metav1.ManagedFieldsEntry) bool { return mf.Manager == "manager" }) {
		t.Errorf("managers of metadata.finalizers (-want +got):\n%s\nall: %v", diff, w.ManagedFields)
	}
}
