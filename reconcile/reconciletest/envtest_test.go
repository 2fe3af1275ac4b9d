package reconciletest_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}

// createWidget creates a Widget on the API server through c.
func createWidget(t *testing.T, c client.Client, ns, message string) *testapi.Widget {
	t.Helper()
	w := widget(ns, "w", message)
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	return w
}

// TestAPIServerConvergePassesAndFollowsSpecChanges: on a real API server
// the correct reconciler converges with exactly the writes it needs, the
// resync after convergence makes none, and a spec change converges again
// with one patch and one status write.
func TestAPIServerConvergePassesAndFollowsSpecChanges(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	w := createWidget(t, base, ns, "hello")
	var counter rt.Counter
	r := &widgetReconciler{Client: counter.Wrap(base)}

	rep := rt.Converge(t, r, requestFor(w), rt.WithCounter(&counter))

	want := []rt.APIRequest{
		{Verb: rt.VerbCreate, Kind: "ConfigMap", Namespace: ns, Name: "w-config"},
		{Verb: rt.VerbStatusUpdate, Kind: "Widget", Namespace: ns, Name: "w"},
	}
	if diff := cmp.Diff(want, rep.Writes(), ignoreErr); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	assertWidget(t, base, w, 1, "hello")

	// A spec change: the next Converge patches the child and the status.
	var got testapi.Widget
	if err := base.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Message = "bye"
	if err := base.Update(t.Context(), &got); err != nil {
		t.Fatal(err)
	}
	rep = rt.Converge(t, r, requestFor(w), rt.WithCounter(&counter))
	want = []rt.APIRequest{
		{Verb: rt.VerbPatch, Kind: "ConfigMap", Namespace: ns, Name: "w-config"},
		{Verb: rt.VerbStatusUpdate, Kind: "Widget", Namespace: ns, Name: "w"},
	}
	if diff := cmp.Diff(want, rep.Writes(), ignoreErr); diff != "" {
		t.Errorf("writes after the spec change (-want +got):\n%s", diff)
	}
	assertWidget(t, base, w, 2, "bye")
}

func assertWidget(t *testing.T, c client.Client, w *testapi.Widget, generation int64, message string) {
	t.Helper()
	var got testapi.Widget
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	if got.Status.ObservedGeneration != generation || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != generation {
		t.Errorf("status = %+v, want Ready=True with observedGeneration %d", got.Status, generation)
	}
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: w.Namespace, Name: "w-config"}, &cm); err != nil {
		t.Fatalf("config map: %v", err)
	}
	if cm.Data["message"] != message {
		t.Errorf("config map data = %v, want message %q", cm.Data, message)
	}
}

// TestAPIServerConvergeFailsForReconcilerThatWritesEveryTime: the
// idempotency check catches both classic bugs against a real server, and
// says what each write changed.
func TestAPIServerConvergeFailsForReconcilerThatWritesEveryTime(t *testing.T) {
	tests := []struct {
		name      string
		bug       bug
		wantParts []string
	}{
		{"unconditional status update", statusEveryTime, []string{
			"is not idempotent", `update/status Widget`, "no change to the stored object",
		}},
		{"annotation that changes every run", annotateEveryTime, []string{
			"is not idempotent", `patch Widget`, `{"metadata":{"annotations":{"example.com/runs":"2"}}}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := env.Client(t)
			w := createWidget(t, base, env.Namespace(t), "hello")
			var counter rt.Counter
			rec := &recorder{}

			rt.Converge(rec, &buggyReconciler{Client: counter.Wrap(base), bug: tt.bug}, requestFor(w), rt.WithCounter(&counter))

			wantFailure(t, rec, tt.wantParts...)
		})
	}
}

// TestAPIServerFaultsConvergeAndNeverReachTheServer: injected faults are
// returned instead of sending the request (the real server never sees the
// ConfigMap create that failed), and the reconciler converges through them.
func TestAPIServerFaultsConvergeAndNeverReachTheServer(t *testing.T) {
	base := env.Client(t)
	ns := env.Namespace(t)
	w := createWidget(t, base, ns, "hello")
	faults := mustFaults(t, 1, rt.Sequence(rt.FaultServerError, rt.FaultNone, rt.FaultConflict), rt.OnlyVerbs(rt.VerbCreate, rt.VerbStatusUpdate))
	var counter rt.Counter
	r := &widgetReconciler{Client: counter.Wrap(faults.Wrap(base))}

	// One run by hand: the create fails with the injected 500.
	if _, err := r.Reconcile(t.Context(), requestFor(w)); !apierrors.IsInternalError(err) {
		t.Fatalf("first run: err = %v, want the injected internal error", err)
	}
	err := base.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-config"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("config map after an injected create failure: err = %v, want NotFound", err)
	}

	rep := rt.Converge(t, r, requestFor(w), rt.WithCounter(&counter), rt.WithFaults(faults))

	// The create passed, then the status update hit the injected conflict.
	if len(rep.Errors) != 1 || !apierrors.IsConflict(rep.Errors[0]) {
		t.Errorf("errors while converging = %v, want the one injected conflict", rep.Errors)
	}
	var faulted []string
	for _, in := range faults.Injected() {
		faulted = append(faulted, in.Request.String())
	}
	want := []string{
		`create ConfigMap "` + ns + `/w-config" (failed: Internal error occurred: injected by reconciletest)`,
		`update/status Widget "` + ns + `/w" (failed: Operation cannot be fulfilled on widgets.testing.reconcilekit.io "w": injected by reconciletest)`,
	}
	if diff := cmp.Diff(want, faulted); diff != "" {
		t.Errorf("injected faults (-want +got):\n%s", diff)
	}
	assertWidget(t, base, w, 1, "hello")
}

// TestAPIServerCounterWatch: client.New's client cannot watch, and the
// wrapped Watch says so; a client from client.NewWithWatch watches through
// the counter.
func TestAPIServerCounterWatch(t *testing.T) {
	ns := env.Namespace(t)
	var counter rt.Counter
	noWatch, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	_, err = counter.Wrap(noWatch).Watch(t.Context(), &corev1.ConfigMapList{})
	if !errors.Is(err, rt.ErrWatchUnsupported) {
		t.Errorf("Watch through client.New's client: err = %v, want ErrWatchUnsupported", err)
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := counter.Wrap(wc).Watch(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	watcher.Stop()
	if got := counter.Count(rt.VerbWatch, "ConfigMap"); got != 2 {
		t.Errorf("watches recorded = %d, want 2", got)
	}
}

// TestAPIServerCounterRecordsApply: server-side apply, through an
// unstructured or a typed client-go apply configuration, is recorded as an
// apply of its kind and object, and counts as a write.
func TestAPIServerCounterRecordsApply(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name string
		ac   runtime.ApplyConfiguration
	}{
		{"unstructured", client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": ns, "name": "unstructured"},
			"data":     map[string]any{"k": "v"},
		}})},
		{"typed", corev1ac.ConfigMap("typed", ns).WithData(map[string]string{"k": "v"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter rt.Counter
			c := counter.Wrap(env.Client(t))
			if err := c.Apply(t.Context(), tt.ac, client.FieldOwner("reconciletest")); err != nil {
				t.Fatalf("apply: %v", err)
			}
			want := []rt.APIRequest{{Verb: rt.VerbApply, Kind: "ConfigMap", Namespace: ns, Name: tt.name}}
			if diff := cmp.Diff(want, counter.Writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAPIServerConvergeReportsWhatAnUpdateAdds is
// TestConvergeReportsWhatAnUpdateAdds against a real server, whose client
// decodes responses differently from the fake's.
func TestAPIServerConvergeReportsWhatAnUpdateAdds(t *testing.T) {
	base := env.Client(t)
	w := widget(env.Namespace(t), "w", "")
	w.Annotations = map[string]string{"example.com/flip": "on"}
	if err := base.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	var counter rt.Counter
	rec := &recorder{}

	rt.Converge(rec, &flipReconciler{Client: counter.Wrap(base)}, requestFor(w), rt.WithCounter(&counter))

	wantFailure(t, rec, `1. update Widget`, "changes (-stored +sent)", `"example.com/flip"`)
}
