package applyset_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
)

// TestValidate proves a Set set up wrong says what is wrong, permanent,
// and that its Apply returns that error without a request.
func TestValidate(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns := env.Namespace(t)
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: "1"}}
	for _, tc := range []struct {
		name   string
		set    func() *applyset.Set
		is     error
		saying string
	}{
		{"no field owner", func() *applyset.Set { return applyset.New(c, "") }, errors.ErrNoFieldOwner, "applyset.New(c, name)"},
		{"no client", func() *applyset.Set { return applyset.New(nil, testOwner) }, applyset.ErrInvalidSet, "no client"},
		{"a propagation of no policy", func() *applyset.Set {
			s := applyset.New(c, testOwner)
			s.Propagation = "Sometimes"
			return s
		}, applyset.ErrInvalidSet, `Propagation is "Sometimes"`},
		{"a tooling without a version", func() *applyset.Set {
			s := applyset.New(c, testOwner)
			s.Tooling = "webapp"
			return s
		}, applyset.ErrInvalidSet, `Tooling is "webapp"`},
		{"a negative MaxWaiting", func() *applyset.Set {
			s := applyset.New(c, testOwner)
			s.MaxWaiting = -1
			return s
		}, applyset.ErrInvalidSet, "MaxWaiting is -1"},
		{"a hot-loop detector set wrong", func() *applyset.Set {
			s := applyset.New(c, testOwner)
			s.HotLoops = &drift.HotLoopDetector{Threshold: 1}
			return s
		}, applyset.ErrInvalidSet, "HotLoops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.set()
			err := s.Validate()
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.saying) {
				t.Fatalf("Validate() = %v, want %v saying %q", err, tc.is, tc.saying)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("the error is %v, want permanent", class)
			}
			reqs.Reset()
			if _, err := s.Apply(t.Context(), parent, children(configMap(ns, "x", "1"))); !errors.Is(err, tc.is) {
				t.Errorf("Apply() = %v, want the Validate error", err)
			}
			if n := reqs.Counts(); len(n) != 0 {
				t.Errorf("Apply of an invalid Set sent %v", n)
			}
		})
	}
	if err := applyset.New(c, testOwner).Validate(); err != nil {
		t.Errorf("a Set built by New does not validate: %v", err)
	}
}

// TestParentWithoutUIDIsRefused proves a parent that was not read from the
// API server (no UID: no owner reference can name it) is a permanent error
// before any request.
func TestParentWithoutUIDIsRefused(t *testing.T) {
	c, reqs := env.CountingClient(t)
	_, err := applyset.New(c, testOwner).Apply(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "p"}},
		[]applyset.Child{{Object: client.Object(configMap("x", "a", "1"))}})
	if class, _ := errors.Classify(err); err == nil || class != errors.ClassPermanent {
		t.Fatalf("Apply with a parent without a UID: %v (%v), want a permanent error", err, class)
	}
	if n := reqs.Counts(); len(n) != 0 {
		t.Errorf("Apply sent %v", n)
	}
}
