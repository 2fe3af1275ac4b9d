package drift_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

func settings(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: data}
}

// TestWriterValidate: what keeps a Writer from working is reported by
// Validate, classed permanent, and every call returns it before sending any
// request.
func TestWriterValidate(t *testing.T) {
	tests := []struct {
		name   string
		writer func(c client.Client) *drift.Writer
		want   error // nil: valid
	}{
		{"NewWriter with a client and a name", func(c client.Client) *drift.Writer { return drift.NewWriter(c, "app") }, nil},
		{"with a valid HotLoops and a Clock", func(c client.Client) *drift.Writer {
			w := drift.NewWriter(c, "app")
			w.HotLoops = &drift.HotLoopDetector{Threshold: 2}
			w.Clock = clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			return w
		}, nil},
		{"an empty field owner", func(c client.Client) *drift.Writer { return drift.NewWriter(c, "") }, errors.ErrNoFieldOwner},
		{"the zero Writer", func(client.Client) *drift.Writer { return &drift.Writer{} }, errors.ErrNoFieldOwner},
		{"no client", func(client.Client) *drift.Writer { return drift.NewWriter(nil, "app") }, drift.ErrInvalidWriter},
		{"a HotLoops that would never write", func(c client.Client) *drift.Writer {
			w := drift.NewWriter(c, "app")
			w.HotLoops = &drift.HotLoopDetector{Threshold: 1}
			return w
		}, drift.ErrInvalidHotLoopDetector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter reconciletest.Counter
			w := tt.writer(counter.Wrap(fake.NewClientBuilder().Build()))
			err := w.Validate()
			_, ensureErr := w.Ensure(t.Context(), settings(map[string]string{"mode": "prod"}))
			if tt.want == nil {
				if err != nil || ensureErr != nil {
					t.Fatalf("Validate() = %v, Ensure: %v; want nil", err, ensureErr)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(ensureErr, tt.want) {
				t.Fatalf("Validate() = %v, Ensure: %v; want %v", err, ensureErr, tt.want)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent || !errors.Is(ensureErr, crreconcile.TerminalError(nil)) {
				t.Errorf("classed %v, want permanent (terminal)", class)
			}
			if tt.want == drift.ErrInvalidHotLoopDetector && !errors.Is(err, drift.ErrInvalidWriter) {
				t.Errorf("Validate() = %v, want it to match ErrInvalidWriter too", err)
			}
			if n := len(counter.Requests()); n != 0 {
				t.Errorf("Ensure sent %d requests, want none", n)
			}
		})
	}
}

func TestWriterRefusesANilObject(t *testing.T) {
	w := drift.NewWriter(fake.NewClientBuilder().Build(), "app")
	var cm *corev1.ConfigMap
	for name, call := range map[string]func() error{
		"Ensure":        func() error { _, err := w.Ensure(t.Context(), cm); return err },
		"EnsureMutate":  func() error { _, err := w.EnsureMutate(t.Context(), nil, func() error { return nil }); return err },
		"EnsureApplied": func() error { _, err := w.EnsureApplied(t.Context(), cm); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s(nil): no error", name)
		} else if class, _ := errors.Classify(err); class != errors.ClassPermanent {
			t.Errorf("%s(nil): %v classed %v, want permanent", name, err, class)
		}
	}
}

// TestDeprecatedNamesStillWork: every name that moved to package compare,
// or gave way to the Writer, keeps working as before for one minor
// version.
func TestDeprecatedNamesStillWork(t *testing.T) {
	ctx := context.Background()

	// Aliases match both ways.
	for _, pair := range [][2]error{
		{drift.ErrNotComparable, compare.ErrNotComparable},
		{drift.ErrInvalidPath, compare.ErrInvalidPath},
		{drift.ErrNoFieldOwner, errors.ErrNoFieldOwner},
	} {
		if !errors.Is(pair[0], pair[1]) || !errors.Is(pair[1], pair[0]) {
			t.Errorf("%v and %v do not match both ways", pair[0], pair[1])
		}
	}
	var c drift.Comparison = compare.Comparison{Equal: true}
	if c.String() != "no drift" {
		t.Errorf("drift.Comparison is not compare.Comparison")
	}

	// drift.Diff is compare.Diff with the built-in rules and client-go's
	// scheme, its options forwarded.
	desired := exampleDeployment("nginx:1.26")
	desired.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "a"}}
	live := exampleDeployment("nginx:1.25")
	live.Labels["extra"] = "1"
	live.Status.Replicas = 3
	got, err := drift.Diff(desired, live, drift.IgnorePaths("spec.template.spec.containers[*].image"),
		drift.Own("metadata.labels"), drift.CompareStatus(), drift.CompareOwnerReferences(),
		drift.ListKey("spec.template.spec.tolerations", "key"), drift.CmpOptions(), drift.WithFieldOwner("web"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := compare.Diff(desired, live, compare.Rules(compare.KubernetesRules()...), compare.IgnorePaths("spec.template.spec.containers[*].image"),
		compare.Own("metadata.labels"), compare.IncludeStatus(), compare.IncludeOwnerReferences(),
		compare.ListKey("spec.template.spec.tolerations", "key"), compare.WithFieldOwner("web"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Paths, got.Paths); diff != "" || len(got.Paths) == 0 {
		t.Errorf("drift.Diff paths (-compare.Diff +drift.Diff):\n%s", diff)
	}
	if _, err := drift.Diff(desired, live, drift.IgnorePaths("[bad")); !errors.Is(err, drift.ErrInvalidPath) {
		t.Errorf("drift.Diff with a bad path: %v, want ErrInvalidPath", err)
	}

	// The package-level writers write as WithFieldOwner's name;
	// DetectHotLoops gives the call a detector.
	fc := fake.NewClientBuilder().WithReturnManagedFields().Build()
	cm := settings(map[string]string{"mode": "prod"})
	if out, err := drift.Ensure(ctx, fc, cm, drift.WithFieldOwner("old-style")); err != nil || out.Operation != drift.OperationCreated {
		t.Fatalf("drift.Ensure: %q, %v", out.Operation, err)
	}
	mutated := settings(nil)
	if out, err := drift.EnsureMutate(ctx, fc, mutated, func() error { mutated.Data = map[string]string{"mode": "debug"}; return nil },
		drift.WithFieldOwner("old-style"), drift.DetectHotLoops(&drift.HotLoopDetector{})); err != nil || out.Operation != drift.OperationUpdated {
		t.Fatalf("drift.EnsureMutate: %q, %v", out.Operation, err)
	}
	managers := func(o client.Object) []string {
		var out []string
		for _, mf := range o.GetManagedFields() {
			out = append(out, mf.Manager)
		}
		return out
	}
	if diff := cmp.Diff([]string{"old-style"}, managers(mutated)); diff != "" {
		t.Errorf("field managers (-want +got):\n%s", diff)
	}
	if _, err := drift.EnsureMutate(ctx, fc, settings(nil), func() error { return nil },
		drift.WithFieldOwner("old-style"), drift.DetectHotLoops(&drift.HotLoopDetector{Threshold: 1})); !errors.Is(err, drift.ErrInvalidHotLoopDetector) {
		t.Errorf("drift.EnsureMutate with a detector that would never write: %v, want ErrInvalidHotLoopDetector", err)
	}
}

// TestAWriterWritesAsItsOwnFieldOwner: a Writer's field owner is the one
// NewWriter got; the deprecated WithFieldOwner, passed to a Writer's call,
// does not change it.
func TestAWriterWritesAsItsOwnFieldOwner(t *testing.T) {
	fc := fake.NewClientBuilder().WithReturnManagedFields().Build()
	cm := settings(map[string]string{"mode": "prod"})
	if _, err := drift.NewWriter(fc, "app").Ensure(t.Context(), cm, drift.WithFieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	if n := len(cm.ManagedFields); n != 1 || cm.ManagedFields[0].Manager != "app" {
		t.Errorf("managedFields %v, want app's alone", cm.ManagedFields)
	}
}
