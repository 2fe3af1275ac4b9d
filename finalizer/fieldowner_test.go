package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// TestEveryCallWithoutAFieldOwnerFailsPermanentlyAndSendsNothing:
// forgetting the field owner is never silent. Every call of a Writer built
// with an empty name returns errors.ErrNoFieldOwner, classed permanent (a
// controller-runtime terminal error), sends no request and runs no
// cleanup, also when it would have had nothing to write: the mistake shows
// on the first reconcile, not on the deletion its finalizer would then
// hold up.
func TestEveryCallWithoutAFieldOwnerFailsPermanentlyAndSendsNothing(t *testing.T) {
	var cleanups int
	registry := &finalizer.Registry[*testapi.Widget]{}
	if err := registry.Register(fooFinalizer, finalizer.Func[*testapi.Widget](func(context.Context, *testapi.Widget) error {
		cleanups++
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	// Each call is made through a Writer built with an empty name.
	type call func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error
	tests := []struct {
		name string
		// finalizers the Widget has; deleting deletes it first.
		finalizers []string
		deleting   bool
		call       call
	}{
		{name: "Add, missing", call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := fw.Add(ctx, w, fooFinalizer)
			return err
		}},
		{name: "Add, present", finalizers: []string{fooFinalizer}, call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := fw.Add(ctx, w, fooFinalizer)
			return err
		}},
		{name: "Remove, present", finalizers: []string{fooFinalizer}, call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := fw.Remove(ctx, w, fooFinalizer)
			return err
		}},
		{name: "Remove, absent", call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := fw.Remove(ctx, w, fooFinalizer)
			return err
		}},
		{name: "Registry.AddMissing", call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := registry.AddMissing(ctx, fw, w)
			return err
		}},
		{name: "Registry.Finalize", finalizers: []string{fooFinalizer}, deleting: true, call: func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
			_, err := registry.Finalize(ctx, fw, w)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, reqs := countingClient(t)
			w := newWidget(t, c, env.Namespace(t), "w", tt.finalizers...)
			if tt.deleting {
				deleted(t, c, w)
			}
			reqs.Snapshot()
			cleanups = 0
			err := tt.call(t.Context(), finalizer.NewWriter(c, ""), w)
			if !errors.Is(err, rkerrors.ErrNoFieldOwner) || !errors.Is(err, finalizer.ErrInvalidWriter) ||
				!strings.Contains(err.Error(), "finalizer.NewWriter(c, fieldOwner)") {
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

// TestPatchesCarryTheFieldOwner: the finalizer patches are recorded in
// managedFields under the name the Writer was built with, not under the
// client's default manager (here "manager", every kubebuilder binary's
// name).
func TestPatchesCarryTheFieldOwner(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "manager"
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	fw := finalizer.NewWriter(c, "widget-operator")
	ctx := t.Context()
	w := newWidget(t, env.Client(t), env.Namespace(t), "w")
	if _, err := fw.Add(ctx, w, fooFinalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Add(ctx, w, barFinalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Remove(ctx, w, fooFinalizer); err != nil {
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

// TestWriterValidate: Validate refuses each way a Writer can be set up
// wrong, with an error that names it, and accepts what NewWriter builds.
func TestWriterValidate(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	withRetry := func(b wait.Backoff) *finalizer.Writer {
		w := finalizer.NewWriter(c, "app-controller")
		w.Retry = b
		return w
	}
	tests := []struct {
		name string
		w    *finalizer.Writer
		want []error // nil: valid
	}{
		{name: "built by NewWriter", w: finalizer.NewWriter(c, "app-controller")},
		{name: "with an API reader and a retry", w: func() *finalizer.Writer {
			w := withRetry(wait.Backoff{Steps: 3, Duration: time.Millisecond})
			w.APIReader = c
			return w
		}()},
		{name: "nil", w: nil, want: []error{finalizer.ErrInvalidWriter}},
		{name: "zero", w: &finalizer.Writer{}, want: []error{finalizer.ErrInvalidWriter}},
		{name: "no client", w: finalizer.NewWriter(nil, "app-controller"), want: []error{finalizer.ErrInvalidWriter}},
		{name: "no field owner", w: finalizer.NewWriter(c, ""), want: []error{finalizer.ErrInvalidWriter, rkerrors.ErrNoFieldOwner}},
		{name: "negative Retry.Steps", w: withRetry(wait.Backoff{Steps: -1}), want: []error{finalizer.ErrInvalidWriter}},
		{name: "negative Retry.Factor", w: withRetry(wait.Backoff{Factor: -2}), want: []error{finalizer.ErrInvalidWriter}},
		{name: "negative Retry.Cap", w: withRetry(wait.Backoff{Cap: -time.Second}), want: []error{finalizer.ErrInvalidWriter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("Validate = %v, want it to match %v", err, want)
				}
			}
		})
	}
}

// TestAnInvalidWriterSendsNothing: every call of a Writer that Validate
// refuses returns that error, permanent, and sends no request.
func TestAnInvalidWriterSendsNothing(t *testing.T) {
	c, reqs := countingClient(t)
	w := newWidget(t, c, env.Namespace(t), "w")
	reqs.Snapshot()
	fw := finalizer.NewWriter(c, testOwner)
	fw.Retry = wait.Backoff{Steps: -1}
	changed, err := fw.Add(t.Context(), w, fooFinalizer)
	if changed || !errors.Is(err, finalizer.ErrInvalidWriter) {
		t.Fatalf("Add = %v, %v; want false and ErrInvalidWriter", changed, err)
	}
	if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent {
		t.Errorf("class %v, want permanent", class)
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("requests %v, want none", got)
	}
}
