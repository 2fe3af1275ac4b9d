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
// with an empty name, and every deprecated call without WithFieldOwner,
// returns errors.ErrNoFieldOwner (which the deprecated
// finalizer.ErrNoFieldOwner still matches), classed permanent (a
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
	// Each call is made three ways: through a Writer built with an empty
	// name, and through the deprecated functions with no option and with
	// an empty name.
	type call struct {
		writer     func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error
		deprecated func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error
	}
	tests := []struct {
		name string
		// finalizers the Widget has; deleting deletes it first.
		finalizers []string
		deleting   bool
		call       call
	}{
		{name: "Add, missing", call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := fw.Add(ctx, w, fooFinalizer)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := finalizer.Add(ctx, c, w, fooFinalizer, opts...)
				return err
			}}},
		{name: "Add, present", finalizers: []string{fooFinalizer}, call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := fw.Add(ctx, w, fooFinalizer)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := finalizer.Add(ctx, c, w, fooFinalizer, opts...)
				return err
			}}},
		{name: "Remove, present", finalizers: []string{fooFinalizer}, call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := fw.Remove(ctx, w, fooFinalizer)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := finalizer.Remove(ctx, c, w, fooFinalizer, opts...)
				return err
			}}},
		{name: "Remove, absent", call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := fw.Remove(ctx, w, fooFinalizer)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := finalizer.Remove(ctx, c, w, fooFinalizer, opts...)
				return err
			}}},
		{name: "Registry.AddMissing", call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := registry.AddMissing(ctx, fw, w)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := registry.AddAll(ctx, c, w, opts...)
				return err
			}}},
		{name: "Registry.Finalize", finalizers: []string{fooFinalizer}, deleting: true, call: call{
			func(ctx context.Context, fw *finalizer.Writer, w *testapi.Widget) error {
				_, err := registry.Finalize(ctx, fw, w)
				return err
			},
			func(ctx context.Context, c client.Client, w *testapi.Widget, opts ...finalizer.Option) error {
				_, err := registry.Run(ctx, c, w, opts...)
				return err
			}}},
	}
	ways := []struct {
		name string
		call func(ctx context.Context, c client.Client, w *testapi.Widget, cl call) error
		hint string
	}{
		{"NewWriter with an empty name", func(ctx context.Context, c client.Client, w *testapi.Widget, cl call) error {
			return cl.writer(ctx, finalizer.NewWriter(c, ""), w)
		}, "finalizer.NewWriter(c, fieldOwner)"},
		{"deprecated, no option", func(ctx context.Context, c client.Client, w *testapi.Widget, cl call) error {
			return cl.deprecated(ctx, c, w)
		}, "finalizer.NewWriter(c, fieldOwner)"},
		{"deprecated, an empty name", func(ctx context.Context, c client.Client, w *testapi.Widget, cl call) error {
			return cl.deprecated(ctx, c, w, finalizer.WithFieldOwner(""))
		}, "finalizer.NewWriter(c, fieldOwner)"},
	}
	for _, tt := range tests {
		for _, way := range ways {
			t.Run(tt.name+"/"+way.name, func(t *testing.T) {
				c, reqs := countingClient(t)
				w := newWidget(t, c, env.Namespace(t), "w", tt.finalizers...)
				if tt.deleting {
					deleted(t, c, w)
				}
				reqs.Snapshot()
				cleanups = 0
				err := way.call(t.Context(), c, w, tt.call)
				if !errors.Is(err, rkerrors.ErrNoFieldOwner) || !errors.Is(err, finalizer.ErrNoFieldOwner) ||
					!errors.Is(err, finalizer.ErrInvalidWriter) || !strings.Contains(err.Error(), way.hint) {
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
// managedFields under the name the Writer was built with (or, deprecated,
// WithFieldOwner gives), not under the client's default manager (here
// "manager", every kubebuilder binary's name).
func TestPatchesCarryTheFieldOwner(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "manager"
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	type adder func(ctx context.Context, obj client.Object, name string) (bool, error)
	fw := finalizer.NewWriter(c, "widget-operator")
	owner := finalizer.WithFieldOwner("widget-operator")
	for _, tt := range []struct {
		name        string
		add, remove adder
	}{
		{"Writer", fw.Add, fw.Remove},
		{"deprecated functions", func(ctx context.Context, obj client.Object, name string) (bool, error) {
			return finalizer.Add(ctx, c, obj, name, owner)
		}, func(ctx context.Context, obj client.Object, name string) (bool, error) {
			return finalizer.Remove(ctx, c, obj, name, owner)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			w := newWidget(t, env.Client(t), env.Namespace(t), "w")
			if _, err := tt.add(ctx, w, fooFinalizer); err != nil {
				t.Fatal(err)
			}
			if _, err := tt.add(ctx, w, barFinalizer); err != nil {
				t.Fatal(err)
			}
			if _, err := tt.remove(ctx, w, fooFinalizer); err != nil {
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
		})
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

// TestDeprecatedOptionsReachTheWriter: WithRetry and WithAPIReader still
// work, as the Writer's Retry and APIReader: one attempt gives up on a
// conflict, and the re-read after a conflict goes through the reader.
func TestDeprecatedOptionsReachTheWriter(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	owner := finalizer.WithFieldOwner(testOwner)

	w := newWidget(t, c, env.Namespace(t), "once")
	stale := w.DeepCopy()
	if _, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, barFinalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Add(ctx, c, stale, fooFinalizer, finalizer.WithRetry(wait.Backoff{}), owner); err == nil {
		t.Error("WithRetry of no steps: Add on a stale object succeeded, want the conflict of its one attempt")
	}

	reader, reqs := countingClient(t)
	w = newWidget(t, c, env.Namespace(t), "reread")
	stale = w.DeepCopy()
	if _, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, barFinalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Add(ctx, c, stale, fooFinalizer, finalizer.WithAPIReader(reader), owner); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"get": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests through the API reader (-want +got):\n%s", diff)
	}
}
