package status_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

// fakeWriter returns a Writer over a fake client holding one Widget, and a
// counter of the status patches it sends.
func fakeWriter(t *testing.T) (*status.Writer, *testapi.Widget, *int) {
	t.Helper()
	c, obj, patches := fakeClient(t)
	return status.NewWriter(c, "test-controller"), obj, patches
}

// fakeClient returns a fake client holding one Widget, the Widget, and a
// counter of the status patches sent through the client.
func fakeClient(t *testing.T) (client.Client, *testapi.Widget, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := testapi.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var patches int
	c := interceptor.NewClient(
		fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&testapi.Widget{}).
			WithObjects(&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Generation: 1}}).Build(),
		interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}},
	)
	obj := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "w"}, obj); err != nil {
		t.Fatal(err)
	}
	return c, obj, &patches
}

func TestWriterRefusesBadSetupWithClearErrors(t *testing.T) {
	_, obj, _ := fakeWriter(t)
	tests := []struct {
		name  string
		write func() (bool, error)
		want  error
	}{
		{
			name: "zero Writer has no client",
			write: func() (bool, error) {
				var w status.Writer
				o := obj.DeepCopy()
				return w.Patch(t.Context(), o, func() error { status.MarkReady(o, "", ""); return nil })
			},
			want: status.ErrNoClient,
		},
		{
			name: "object never read from the server has no resourceVersion",
			write: func() (bool, error) {
				w, _, _ := fakeWriter(t)
				o := obj.DeepCopy()
				o.ResourceVersion = ""
				return w.Patch(t.Context(), o, func() error { status.MarkReady(o, "", ""); return nil })
			},
			want: status.ErrNoResourceVersion,
		},
		{
			name: "a Writer built with an empty field owner",
			write: func() (bool, error) {
				c, _, patches := fakeClient(t)
				w := status.NewWriter(c, "")
				o := obj.DeepCopy()
				changed, err := w.Patch(t.Context(), o, func() error { status.MarkReady(o, "", ""); return nil })
				if *patches != 0 {
					t.Errorf("%d patches sent without a field owner, want 0", *patches)
				}
				return changed, err
			},
			want: rkerrors.ErrNoFieldOwner,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := tt.write()
			if changed || !errors.Is(err, tt.want) {
				t.Errorf("changed=%v err=%v, want false and %v", changed, err, tt.want)
			}
		})
	}
}

func TestSnapshotZeroValueAndNilObjectReportAnError(t *testing.T) {
	w, _, _ := fakeWriter(t)
	for name, s := range map[string]*status.Snapshot{
		"zero Snapshot":       {},
		"nil Snapshot":        nil,
		"nil object":          w.Snapshot(nil),
		"nil Writer snapshot": (*status.Writer)(nil).Snapshot(&testapi.Widget{}),
	} {
		t.Run(name, func(t *testing.T) {
			if changed, err := s.Write(t.Context()); changed || err == nil {
				t.Errorf("Write = %v, %v; want false and an error", changed, err)
			}
			if _, err := s.Changed(); err == nil {
				t.Error("Changed returned no error")
			}
		})
	}
}

func TestWriterPatchWritesNothingWhenMutateFails(t *testing.T) {
	w, obj, patches := fakeWriter(t)
	boom := errors.New("boom")
	changed, err := w.Patch(t.Context(), obj, func() error {
		status.MarkReady(obj, "", "")
		return boom
	})
	if changed || !errors.Is(err, boom) || *patches != 0 {
		t.Errorf("changed=%v err=%v patches=%d, want false, boom, 0", changed, err, *patches)
	}
}

func TestSnapshotChangedAndRepeatedWrites(t *testing.T) {
	w, obj, patches := fakeWriter(t)
	s := w.Snapshot(obj)

	// A change outside status is not a status change.
	obj.Spec.Message = "spec only"
	if changed, err := s.Changed(); changed || err != nil {
		t.Errorf("after a spec change: Changed = %v, %v; want false, nil", changed, err)
	}
	status.MarkReady(obj, "Reconciled", "")
	if changed, err := s.Changed(); !changed || err != nil {
		t.Errorf("after MarkReady: Changed = %v, %v; want true, nil", changed, err)
	}
	if *patches != 0 {
		t.Errorf("Changed sent %d patches", *patches)
	}
	if changed, err := s.Write(t.Context()); !changed || err != nil {
		t.Fatalf("first Write = %v, %v; want true, nil", changed, err)
	}
	// The written state is the new snapshot: writing again sends nothing.
	if changed, err := s.Write(t.Context()); changed || err != nil {
		t.Errorf("second Write = %v, %v; want false, nil", changed, err)
	}
	if *patches != 1 {
		t.Errorf("%d status patches, want 1", *patches)
	}
}

// TestWriterWithoutAFieldOwner: every write of a Writer built without a
// field owner fails for good (permanent, a controller-runtime terminal
// error) and sends nothing, also when there is nothing to change: the
// mistake shows on the first reconcile.
func TestWriterWithoutAFieldOwner(t *testing.T) {
	c, obj, patches := fakeClient(t)
	w := status.NewWriter(c, "")
	for name, mutate := range map[string]func() error{
		"nothing to change": func() error { return nil },
		"a change":          func() error { status.MarkReady(obj, "Reconciled", ""); return nil },
	} {
		t.Run(name, func(t *testing.T) {
			changed, err := w.Patch(t.Context(), obj, mutate)
			if changed || !errors.Is(err, rkerrors.ErrNoFieldOwner) ||
				!errors.Is(err, status.ErrInvalidWriter) || !strings.Contains(err.Error(), "status.NewWriter(c, fieldOwner)") {
				t.Fatalf("Patch = %v, %v; want false and ErrNoFieldOwner saying how to fix it", changed, err)
			}
			if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent || !errors.Is(err, crreconcile.TerminalError(nil)) {
				t.Errorf("class %v, terminal %v; want permanent and terminal", class, errors.Is(err, crreconcile.TerminalError(nil)))
			}
		})
	}
	if *patches != 0 {
		t.Errorf("%d patches, want 0", *patches)
	}
}

// TestWriterValidate: Validate refuses each way a Writer can be set up
// wrong, with an error that names it, and accepts what NewWriter builds.
func TestWriterValidate(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	withRetry := func(b wait.Backoff) *status.Writer {
		w := status.NewWriter(c, "x")
		w.Retry = b
		return w
	}
	tests := []struct {
		name string
		w    *status.Writer
		want []error // nil: valid
	}{
		{name: "built by NewWriter", w: status.NewWriter(c, "app-controller")},
		{name: "nil", w: nil, want: []error{status.ErrInvalidWriter}},
		{name: "zero", w: &status.Writer{}, want: []error{status.ErrInvalidWriter, status.ErrNoClient}},
		{name: "no client", w: status.NewWriter(nil, "app-controller"), want: []error{status.ErrInvalidWriter, status.ErrNoClient}},
		{name: "no field owner", w: status.NewWriter(c, ""), want: []error{status.ErrInvalidWriter, rkerrors.ErrNoFieldOwner}},
		{name: "negative Retry.Steps", w: withRetry(wait.Backoff{Steps: -1}), want: []error{status.ErrInvalidWriter}},
		{name: "negative Retry.Duration", w: withRetry(wait.Backoff{Duration: -time.Second}), want: []error{status.ErrInvalidWriter}},
		{name: "negative Retry.Jitter", w: withRetry(wait.Backoff{Jitter: -1}), want: []error{status.ErrInvalidWriter}},
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

// TestWriterRefusesAnInvalidRetryBeforeSending: a write of a Writer that
// Validate refuses sends nothing and returns that error, permanent.
func TestWriterRefusesAnInvalidRetryBeforeSending(t *testing.T) {
	w, obj, patches := fakeWriter(t)
	w.Retry = wait.Backoff{Steps: -3}
	changed, err := w.Patch(t.Context(), obj, func() error { status.MarkReady(obj, "Reconciled", ""); return nil })
	if changed || !errors.Is(err, status.ErrInvalidWriter) {
		t.Fatalf("Patch = %v, %v; want false and ErrInvalidWriter", changed, err)
	}
	if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent {
		t.Errorf("class %v, want permanent", class)
	}
	if *patches != 0 {
		t.Errorf("%d patches, want 0", *patches)
	}
}
