package controller_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

// longName is a valid At name of n characters whose character at index i
// is c (the rest are letters and, every 10 characters, a '.').
func longName(n, i int, c byte) string {
	b := []byte(strings.Repeat("a", n))
	for j := 9; j < n-1; j += 10 {
		b[j] = '.'
	}
	b[i] = c
	return string(b)
}

// TestPodNameIsAValidHostnameForEveryAtName proves the Pod name derived from
// any valid At name, up to 253 characters, is a valid Pod name of at most 63
// characters, also when the 52-character cut ends on a '.' or a '-' (it
// used to give "….-uid", which the API server refuses).
func TestPodNameIsAValidHostnameForEveryAtName(t *testing.T) {
	uid := types.UID("0f3a9c2e-7d41-4b8e-9a1c-5e2f7b3d4c6a")
	tests := []struct {
		name, atName string
	}{
		{"short", "hello"},
		{"exactly 52", strings.Repeat("b", 52)},
		{"253 with '.' at the cut", longName(253, 51, '.')},
		{"253 with '-' at the cut", longName(253, 51, '-')},
		{"253 with \"--\" at the cut", strings.Repeat("a", 50) + "--" + strings.Repeat("b", 201)},
		{"253 with a letter at the cut", longName(253, 51, 'z')},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := validation.IsDNS1123Subdomain(tt.atName); len(errs) > 0 {
				t.Fatalf("the test's At name is invalid: %v", errs)
			}
			got := controller.PodName(&atv1.At{ObjectMeta: metav1.ObjectMeta{Name: tt.atName, UID: uid}})
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("PodName = %q: not a valid Pod name: %v", got, errs)
			}
			if len(got) > 63 {
				t.Errorf("PodName = %q: %d characters, more than a hostname's 63", got, len(got))
			}
			if !strings.HasSuffix(got, "-0f3a9c2e") {
				t.Errorf("PodName = %q: does not end with the UID's first 8 characters", got)
			}
		})
	}
}

// TestAnAtWithA253CharacterNameRunsItsPod proves, on a real API server, that
// an At with the longest name the API allows, cut where a '.' falls, gets
// its Pod and goes RUNNING instead of Stalled.
func TestAnAtWithA253CharacterNameRunsItsPod(t *testing.T) {
	c, _ := startManager(t)
	ns := env.Namespace(t)
	at := newAt(ns, longName(253, 51, '.'), rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	running := waitFor(t, c, client.ObjectKeyFromObject(at), "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	pod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: running.Status.PodName}, pod); err != nil {
		t.Fatalf("the At's Pod %q: %v", running.Status.PodName, err)
	}
}
