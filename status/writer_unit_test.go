package status_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
func fakeWriter(t *testing.T) (status.Writer, *testapi.Widget, *int) {
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
	return status.Writer{Client: c, FieldOwner: "test-controller"}, obj, &patches
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
			name: "a write without a field owner",
			write: func() (bool, error) {
				w, _, patches := fakeWriter(t)
				w.FieldOwner = ""
				o := obj.DeepCopy()
				changed, err := w.Patch(t.Context(), o, func() error { status.MarkReady(o, "", ""); return nil })
				if *patches != 0 {
					t.Errorf("%d patches sent without a field owner, want 0", *patches)
				}
				return changed, err
			},
			want: status.ErrNoFieldOwner,
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

// TestWriterWithoutAFieldOwner: a write that would send a request without
// FieldOwner fails for good (permanent, a controller-runtime terminal
// error) and sends nothing; a write with nothing to change sends nothing
// and succeeds, as it always did.
func TestWriterWithoutAFieldOwner(t *testing.T) {
	w, obj, patches := fakeWriter(t)
	w.FieldOwner = ""
	if changed, err := w.Patch(t.Context(), obj, func() error { return nil }); changed || err != nil {
		t.Errorf("nothing to change: %v, %v; want false, nil", changed, err)
	}
	_, err := w.Patch(t.Context(), obj, func() error { status.MarkReady(obj, "Reconciled", ""); return nil })
	if !errors.Is(err, status.ErrNoFieldOwner) || !strings.Contains(err.Error(), "Writer.FieldOwner") {
		t.Fatalf("a change: %v, want ErrNoFieldOwner saying how to fix it", err)
	}
	if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent || !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Errorf("class %v, terminal %v; want permanent and terminal", class, errors.Is(err, crreconcile.TerminalError(nil)))
	}
	if *patches != 0 {
		t.Errorf("%d patches, want 0", *patches)
	}
}
