package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestCounterRecordsEachVerb: every method of client.Client is recorded
// with the right verb, kind, namespace and name.
func TestCounterRecordsEachVerb(t *testing.T) {
	w := widget("ns", "w", "hello")
	tests := []struct {
		name string
		do   func(ctx context.Context, c client.Client) error
		want rt.APIRequest
	}{
		{"get", func(ctx context.Context, c client.Client) error {
			return c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "w"}, &testapi.Widget{})
		}, rt.APIRequest{Verb: rt.VerbGet, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"list in a namespace", func(ctx context.Context, c client.Client) error {
			return c.List(ctx, &testapi.WidgetList{}, client.InNamespace("ns"))
		}, rt.APIRequest{Verb: rt.VerbList, Kind: "Widget", Namespace: "ns"}},
		{"list everywhere", func(ctx context.Context, c client.Client) error {
			return c.List(ctx, &corev1.ConfigMapList{})
		}, rt.APIRequest{Verb: rt.VerbList, Kind: "ConfigMap"}},
		{"create", func(ctx context.Context, c client.Client) error {
			return c.Create(ctx, configMap("ns", "cm"))
		}, rt.APIRequest{Verb: rt.VerbCreate, Kind: "ConfigMap", Namespace: "ns", Name: "cm"}},
		{"update", func(ctx context.Context, c client.Client) error {
			var got testapi.Widget
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				return err
			}
			got.Spec.Message = "changed"
			return c.Update(ctx, &got)
		}, rt.APIRequest{Verb: rt.VerbUpdate, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"patch", func(ctx context.Context, c client.Client) error {
			return c.Patch(ctx, w.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"message":"p"}}`)))
		}, rt.APIRequest{Verb: rt.VerbPatch, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"delete", func(ctx context.Context, c client.Client) error {
			return c.Delete(ctx, w.DeepCopy())
		}, rt.APIRequest{Verb: rt.VerbDelete, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"delete all of", func(ctx context.Context, c client.Client) error {
			return c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("ns"))
		}, rt.APIRequest{Verb: rt.VerbDeleteAllOf, Kind: "ConfigMap", Namespace: "ns"}},
		{"status update", func(ctx context.Context, c client.Client) error {
			var got testapi.Widget
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				return err
			}
			got.Status.Phase = "x"
			return c.Status().Update(ctx, &got)
		}, rt.APIRequest{Verb: rt.VerbStatusUpdate, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"status patch", func(ctx context.Context, c client.Client) error {
			return c.Status().Patch(ctx, w.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"status":{"phase":"p"}}`)))
		}, rt.APIRequest{Verb: rt.VerbStatusPatch, Kind: "Widget", Namespace: "ns", Name: "w"}},
		{"get of a missing object is recorded with its error", func(ctx context.Context, c client.Client) error {
			err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "missing"}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("err = %v, want NotFound", err)
			}
			return nil
		}, rt.APIRequest{Verb: rt.VerbGet, Kind: "ConfigMap", Namespace: "ns", Name: "missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter rt.Counter
			c := counter.Wrap(newFake(t, w.DeepCopy()))
			if err := tt.do(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			got := counter.Requests()
			if diff := cmp.Diff(tt.want, got[len(got)-1], ignoreErr); diff != "" {
				t.Errorf("last request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCounterRecordsErrors: a failed request is recorded with the error
// the caller got, and a refused write still counts as a write.
func TestCounterRecordsErrors(t *testing.T) {
	var counter rt.Counter
	c := counter.Wrap(newFake(t, configMap("ns", "cm")))
	err := c.Create(t.Context(), configMap("ns", "cm"))
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create err = %v, want AlreadyExists", err)
	}
	w := counter.Writes()
	if len(w) != 1 || !errors.Is(w[0].Err, err) {
		t.Fatalf("writes = %v, want the failed create with its error", w)
	}
	if got, want := w[0].String(), `create ConfigMap "ns/cm" (failed: `; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("String() = %q, want prefix %q", got, want)
	}
}

// TestCounterCountWritesResetString covers the read side of the counter.
func TestCounterCountWritesResetString(t *testing.T) {
	var counter rt.Counter
	c := counter.Wrap(newFake(t))
	ctx := t.Context()
	for i := range 3 {
		if err := c.Create(ctx, configMap("ns", fmt.Sprint("cm", i))); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm0"}, &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.List(ctx, &testapi.WidgetList{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		verb rt.Verb
		kind string
		want int
	}{
		{rt.VerbCreate, "ConfigMap", 3},
		{rt.VerbCreate, "", 3},
		{rt.VerbGet, "ConfigMap", 2},
		{rt.VerbList, "Widget", 1},
		{rt.VerbCreate, "Widget", 0},
		{rt.VerbUpdate, "", 0},
	}
	for _, tt := range tests {
		if got := counter.Count(tt.verb, tt.kind); got != tt.want {
			t.Errorf("Count(%q, %q) = %d, want %d", tt.verb, tt.kind, got, tt.want)
		}
	}
	if got := len(counter.Writes()); got != 3 {
		t.Errorf("len(Writes()) = %d, want 3", got)
	}
	wantString := "create ConfigMap: 3\nget ConfigMap: 2\nlist Widget: 1\n"
	if diff := cmp.Diff(wantString, counter.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
	counter.Reset()
	if got := counter.Requests(); len(got) != 0 {
		t.Errorf("after Reset, Requests() = %v, want none", got)
	}
}

// TestVerbIsWrite classifies every verb, including subresource verbs.
func TestVerbIsWrite(t *testing.T) {
	tests := []struct {
		verb rt.Verb
		want bool
	}{
		{rt.VerbGet, false}, {rt.VerbList, false}, {rt.VerbWatch, false},
		{rt.VerbCreate, true}, {rt.VerbUpdate, true}, {rt.VerbPatch, true}, {rt.VerbApply, true},
		{rt.VerbDelete, true}, {rt.VerbDeleteAllOf, true},
		{rt.VerbStatusUpdate, true}, {rt.VerbStatusPatch, true}, {rt.VerbStatusApply, true},
		{"get/scale", false}, {"create/eviction", true}, {"", false}, {"frobnicate", false},
	}
	for _, tt := range tests {
		if got := tt.verb.IsWrite(); got != tt.want {
			t.Errorf("%q.IsWrite() = %v, want %v", tt.verb, got, tt.want)
		}
	}
}

// TestRequestString shows each shape of request description.
func TestRequestString(t *testing.T) {
	tests := []struct {
		r    rt.APIRequest
		want string
	}{
		{rt.APIRequest{Verb: rt.VerbGet, Kind: "Widget", Namespace: "ns", Name: "w"}, `get Widget "ns/w"`},
		{rt.APIRequest{Verb: rt.VerbGet, Kind: "Namespace", Name: "ns"}, `get Namespace "ns"`},
		{rt.APIRequest{Verb: rt.VerbList, Kind: "Widget", Namespace: "ns"}, `list Widget in namespace "ns"`},
		{rt.APIRequest{Verb: rt.VerbList, Kind: "Widget"}, `list Widget`},
		{rt.APIRequest{Verb: rt.VerbGet}, `get <unknown kind>`},
		{rt.APIRequest{Verb: rt.VerbUpdate, Kind: "Widget", Name: "w", Err: errors.New("boom")}, `update Widget "w" (failed: boom)`},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestCounterWatchOnClientWithoutWatch: wrapping a client.Client that
// cannot watch gives a Watch with a clear error, not a panic; a client that
// can watch keeps working and the watch is recorded.
func TestCounterWatchOnClientWithoutWatch(t *testing.T) {
	var counter rt.Counter
	base := newFake(t)
	type plainClient struct{ client.Client } // hides the fake's Watch
	_, err := counter.Wrap(plainClient{base}).Watch(t.Context(), &corev1.ConfigMapList{})
	if !errors.Is(err, rt.ErrWatchUnsupported) {
		t.Errorf("Watch err = %v, want ErrWatchUnsupported", err)
	}
	w, err := counter.Wrap(base).Watch(t.Context(), &corev1.ConfigMapList{}, client.InNamespace("ns"))
	if err != nil {
		t.Fatalf("Watch through a watching client: %v", err)
	}
	w.Stop()
	want := []rt.APIRequest{{Verb: rt.VerbWatch, Kind: "ConfigMap"}, {Verb: rt.VerbWatch, Kind: "ConfigMap", Namespace: "ns"}}
	if diff := cmp.Diff(want, counter.Requests(), ignoreErr); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestCounterConcurrentUse: many goroutines through one counter lose no
// request (run with -race).
func TestCounterConcurrentUse(t *testing.T) {
	var counter rt.Counter
	c := counter.Wrap(newFake(t))
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				cm := configMap("ns", fmt.Sprintf("cm-%d-%d", g, i))
				if err := c.Create(t.Context(), cm); err != nil {
					t.Error(err)
				}
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
					t.Error(err)
				}
				_ = counter.Count(rt.VerbGet, "") // reads race with writes
			}
		})
	}
	wg.Wait()
	if got, want := counter.Count(rt.VerbCreate, "ConfigMap"), goroutines*each; got != want {
		t.Errorf("creates = %d, want %d", got, want)
	}
	if got, want := len(counter.Requests()), 2*goroutines*each; got != want {
		t.Errorf("requests = %d, want %d", got, want)
	}
}
