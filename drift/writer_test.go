package drift_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

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
