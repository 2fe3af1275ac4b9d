package status_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		PureBenchmarks:    true,
		Shared:            true,
	})
}

// calls counts the requests a client sends, by verb.
type calls = testenv.Requests

// countingClient returns a client to the test API server that records every
// request it sends in n. get, when not nil, replaces reads (to simulate a
// stale cache).
func countingClient(t *testing.T, n *calls, get func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object) error) client.Client {
	t.Helper()
	env.Require(t)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if get != nil {
		c = interceptor.NewClient(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
				return get(ctx, c, key, obj)
			},
		})
	}
	return n.Wrap(c)
}

func newWidget(t *testing.T, c client.Client) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "w"}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatalf("create: %v", err)
	}
	return w
}

func read(t *testing.T, c client.Client, w *testapi.Widget) *testapi.Widget {
	t.Helper()
	got := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	return got
}

// ignoreTimes compares conditions without their LastTransitionTime, which
// the server stores at a second's precision.
var ignoreTimes = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")

func TestWriterWritesOnceThenNothingOnAnUnchangedReconcile(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	var n calls
	w := status.NewWriter(countingClient(t, &n, nil), "test-controller")
	clk := clocktesting.NewFakePassiveClock(t1Sub)

	// reconcile is what a reconciler does on every pass: read, mark, write.
	reconcile := func() bool {
		obj := read(t, api, created)
		changed, err := w.Patch(t.Context(), obj, func() error {
			status.MarkReady(obj, "Reconciled", "all good", status.WithClock(clk))
			status.ObserveGeneration(obj)
			return nil
		})
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		return changed
	}

	if !reconcile() {
		t.Fatal("first reconcile wrote nothing")
	}
	if diff := cmp.Diff(map[string]int{"patch/status": 1}, n.Counts()); diff != "" {
		t.Errorf("requests of the first reconcile (-want +got):\n%s", diff)
	}
	got := read(t, api, created)
	want := []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Reconciled", Message: "all good", ObservedGeneration: 1, LastTransitionTime: at(t1)}}
	if diff := cmp.Diff(want, got.Status.Conditions, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
	if got.Status.ObservedGeneration != 1 {
		t.Errorf("stored observedGeneration = %d, want 1", got.Status.ObservedGeneration)
	}

	// Time passes; nothing else changes: no request at all.
	clk.SetTime(t1Sub.Add(time.Hour))
	before := n.Counts()
	for range 3 {
		if reconcile() {
			t.Error("an unchanged reconcile reported a write")
		}
	}
	if diff := cmp.Diff(before, n.Counts()); diff != "" {
		t.Errorf("unchanged reconciles sent requests (-before +after):\n%s", diff)
	}
}

// TestWriterWritesAsItsFieldOwner: the status write is recorded in
// managedFields under the Writer's field owner, not under the client's
// default manager (here "manager", the name of every kubebuilder binary).
func TestWriterWritesAsItsFieldOwner(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = "manager"
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := status.NewWriter(c, "widget-operator")
	obj := read(t, api, created)
	if _, err := w.Patch(t.Context(), obj, func() error { status.MarkReady(obj, "Reconciled", ""); return nil }); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range read(t, api, created).ManagedFields {
		managers = append(managers, mf.Manager+"/"+string(mf.Operation)+"/"+mf.Subresource)
	}
	if !slices.Contains(managers, "widget-operator/Update/status") || slices.ContainsFunc(managers, func(m string) bool { return strings.HasPrefix(m, "manager/") }) {
		t.Errorf("field managers %v: want the status write as widget-operator, none as manager", managers)
	}
}

// applyForeign sets a condition with server-side apply as another
// controller (field manager "other-controller") would.
func applyForeign(t *testing.T, c client.Client, w *testapi.Widget, cond metav1.Condition) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	u.SetNamespace(w.Namespace)
	u.SetName(w.Name)
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"type": cond.Type, "status": string(cond.Status), "reason": cond.Reason, "message": cond.Message,
		"lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339),
	}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("other-controller")); err != nil {
		t.Fatalf("apply as other-controller: %v", err)
	}
}

func TestWriterKeepsConditionsOfAnotherFieldManager(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	foreign := metav1.Condition{Type: "Foreign", Status: "True", Reason: "Theirs", Message: "v1", LastTransitionTime: at(t0)}
	applyForeign(t, api, created, foreign)

	var n calls
	w := status.NewWriter(countingClient(t, &n, nil), "test-controller")
	obj := read(t, api, created)
	if _, err := w.Patch(t.Context(), obj, func() error {
		status.MarkReconciling(obj, "Scaling", "")
		return nil
	}); err != nil {
		t.Fatalf("write: %v", err)
	}
	obj = read(t, api, created)
	if _, err := w.Patch(t.Context(), obj, func() error {
		status.MarkReady(obj, "Reconciled", "")
		return nil
	}); err != nil {
		t.Fatalf("write: %v", err)
	}

	// The other manager still owns its condition: it can change it
	// without forcing, and its apply leaves our conditions alone.
	foreign.Message = "v2"
	applyForeign(t, api, created, foreign)

	got := read(t, api, created)
	want := []metav1.Condition{
		{Type: "Foreign", Status: "True", Reason: "Theirs", Message: "v2"},
		{Type: "Ready", Status: "True", Reason: "Reconciled", ObservedGeneration: 1},
	}
	if diff := cmp.Diff(want, got.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"patch/status": 2}, n.Counts()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestWriterSurvivesAConflictFromAStaleObject(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	stale := read(t, api, created)

	// Another writer adds its condition after we read.
	applyForeign(t, api, created, metav1.Condition{Type: "Foreign", Status: "True", Reason: "Theirs", LastTransitionTime: at(t0)})

	var n calls
	w := status.NewWriter(countingClient(t, &n, nil), "test-controller")
	changed, err := w.Patch(t.Context(), stale, func() error {
		status.MarkStalled(stale, "InvalidSpec", "bad")
		status.ObserveGeneration(stale)
		stale.Status.Phase = "Failed"
		return nil
	})
	if err != nil || !changed {
		t.Fatalf("write of a stale object: changed=%v err=%v, want true, nil", changed, err)
	}
	// One refused patch (409), one read, one accepted patch.
	if diff := cmp.Diff(map[string]int{"patch/status": 2, "get": 1}, n.Counts()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	got := read(t, api, created)
	want := []metav1.Condition{
		{Type: "Foreign", Status: "True", Reason: "Theirs"},
		{Type: "Stalled", Status: "True", Reason: "InvalidSpec", Message: "bad", ObservedGeneration: 1},
		{Type: "Ready", Status: "False", Reason: "InvalidSpec", Message: "bad", ObservedGeneration: 1},
	}
	if diff := cmp.Diff(want, got.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
	if got.Status.Phase != "Failed" || got.Status.ObservedGeneration != 1 {
		t.Errorf("stored phase=%q observedGeneration=%d, want Failed, 1", got.Status.Phase, got.Status.ObservedGeneration)
	}
	// The caller's object is the server's latest, so a further write needs
	// no re-read.
	if stale.ResourceVersion != got.ResourceVersion {
		t.Errorf("object resourceVersion = %s after the write, server has %s", stale.ResourceVersion, got.ResourceVersion)
	}
	if diff := cmp.Diff(got.Status.Conditions, stale.Status.Conditions); diff != "" {
		t.Errorf("object conditions after the write differ from the server's (-server +object):\n%s", diff)
	}
}

// TestWriterRereadsThroughAPIReaderNotTheCache simulates a cache that keeps
// returning a stale object: with APIReader set the writer recovers; without
// it, it gives up after Retry.Steps patches with an error that is still a
// Conflict.
func TestWriterRereadsThroughAPIReaderNotTheCache(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	stale := read(t, api, created)
	applyForeign(t, api, created, metav1.Condition{Type: "Foreign", Status: "True", Reason: "Theirs", LastTransitionTime: at(t0)})

	staleCache := func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object) error {
		stale.DeepCopyInto(obj.(*testapi.Widget))
		return nil
	}

	for _, tt := range []struct {
		retry       wait.Backoff
		wantPatches int
	}{
		{retry: wait.Backoff{Steps: 3}, wantPatches: 3},
		{retry: wait.Backoff{}, wantPatches: retry.DefaultRetry.Steps},
	} {
		t.Run(fmt.Sprintf("without APIReader the stale cache makes it give up after Retry.Steps=%d", tt.retry.Steps), func(t *testing.T) {
			var n calls
			w := status.NewWriter(countingClient(t, &n, staleCache), "test-controller")
			w.Retry = tt.retry
			obj := stale.DeepCopy()
			_, err := w.Patch(t.Context(), obj, func() error {
				status.MarkReady(obj, "Reconciled", "")
				return nil
			})
			if !apierrors.IsConflict(err) {
				t.Fatalf("err = %v, want a Conflict", err)
			}
			want := map[string]int{"patch/status": tt.wantPatches, "get": tt.wantPatches - 1}
			if diff := cmp.Diff(want, n.Counts()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("with APIReader it re-reads the server and succeeds", func(t *testing.T) {
		var n, reads calls
		w := status.NewWriter(countingClient(t, &n, staleCache), "test-controller")
		w.APIReader = countingClient(t, &reads, nil)
		obj := stale.DeepCopy()
		changed, err := w.Patch(t.Context(), obj, func() error {
			status.MarkReady(obj, "Reconciled", "")
			return nil
		})
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v, want true, nil", changed, err)
		}
		if diff := cmp.Diff(map[string]int{"patch/status": 2}, n.Counts()); diff != "" {
			t.Errorf("requests through Client (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]int{"get": 1}, reads.Counts()); diff != "" {
			t.Errorf("requests through APIReader (-want +got):\n%s", diff)
		}
		got := read(t, api, created)
		want := []metav1.Condition{
			{Type: "Foreign", Status: "True", Reason: "Theirs"},
			{Type: "Ready", Status: "True", Reason: "Reconciled", ObservedGeneration: 1},
		}
		if diff := cmp.Diff(want, got.Status.Conditions, ignoreTimes); diff != "" {
			t.Errorf("stored conditions (-want +got):\n%s", diff)
		}
	})
}

// TestWriterConcurrentWritersLoseNothing runs two writers, each owning one
// condition type and one observed value, against the same object at the
// same time, each working from its own (often stale) copy.
func TestWriterConcurrentWritersLoseNothing(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	const iterations = 25
	run := func(c client.Client, w *status.Writer, condType string) error {
		obj := &testapi.Widget{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(created), obj); err != nil {
			return err
		}
		for i := range iterations {
			st := iterationStatus(i)
			if _, err := w.Patch(t.Context(), obj, func() error {
				status.SetCondition(obj, metav1.Condition{Type: condType, Status: st, Reason: "Iteration", Message: fmt.Sprint(i)})
				return nil
			}); err != nil {
				return fmt.Errorf("%s iteration %d: %w", condType, i, err)
			}
		}
		return nil
	}
	backoff := wait.Backoff{Steps: 50, Duration: time.Millisecond, Factor: 1.5, Jitter: 1, Cap: 50 * time.Millisecond}
	c := env.Client(t)
	writers := []*status.Writer{status.NewWriter(c, "writer-a"), status.NewWriter(c, "writer-b")}
	for _, w := range writers {
		w.Retry = backoff
	}
	var wg sync.WaitGroup
	errs := make([]error, len(writers))
	for i, w := range writers {
		wg.Go(func() { errs[i] = run(c, w, "Owner"+string(rune('a'+i))) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got := read(t, api, created)
	want := []metav1.Condition{
		{Type: "Ownera", Status: iterationStatus(iterations - 1), Reason: "Iteration", Message: fmt.Sprint(iterations - 1), ObservedGeneration: 1},
		{Type: "Ownerb", Status: iterationStatus(iterations - 1), Reason: "Iteration", Message: fmt.Sprint(iterations - 1), ObservedGeneration: 1},
	}
	sortByType := cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })
	if diff := cmp.Diff(want, got.Status.Conditions, ignoreTimes, sortByType); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
}

// iterationStatus alternates False, True, False, ... so that every iteration
// of a writer is a transition.
func iterationStatus(i int) metav1.ConditionStatus {
	if i%2 == 1 {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func TestWriterReportsAnObjectThatIsGone(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	obj := read(t, api, created)
	if err := api.Delete(t.Context(), created); err != nil {
		t.Fatal(err)
	}
	w := status.NewWriter(api, "test-controller")
	_, err := w.Patch(t.Context(), obj, func() error {
		status.MarkReady(obj, "", "")
		return nil
	})
	if !apierrors.IsNotFound(err) {
		t.Errorf("err = %v, want NotFound", err)
	}
}

func TestWriterWritesUnstructuredObjects(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	applyForeign(t, api, created, metav1.Condition{Type: "Foreign", Status: "True", Reason: "Theirs", LastTransitionTime: at(t0)})
	stale := &unstructured.Unstructured{}
	stale.SetGroupVersionKind(testapi.GroupVersion.WithKind("Widget"))
	if err := api.Get(t.Context(), client.ObjectKeyFromObject(created), stale); err != nil {
		t.Fatal(err)
	}
	// Make it stale so that the conflict path runs on unstructured too.
	applyForeign(t, api, created, metav1.Condition{Type: "Foreign", Status: "False", Reason: "Theirs", LastTransitionTime: at(t1)})

	w := status.NewWriter(api, "test-controller")
	changed, err := w.Patch(t.Context(), stale, func() error {
		return unstructured.SetNestedField(stale.Object, "Running", "status", "phase")
	})
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v, want true, nil", changed, err)
	}
	got := read(t, api, created)
	if got.Status.Phase != "Running" {
		t.Errorf("phase = %q, want Running", got.Status.Phase)
	}
	want := []metav1.Condition{{Type: "Foreign", Status: "False", Reason: "Theirs"}}
	if diff := cmp.Diff(want, got.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("stored conditions (-want +got):\n%s", diff)
	}
}

func TestWriterDoesNotApplyChangesToARecreatedObject(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	old := read(t, api, created)
	if err := api.Delete(t.Context(), created); err != nil {
		t.Fatal(err)
	}
	again := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: created.Namespace, Name: created.Name}}
	if err := api.Create(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	w := status.NewWriter(api, "test-controller")
	_, err := w.Patch(t.Context(), old, func() error {
		status.MarkReady(old, "", "")
		return nil
	})
	if !errors.Is(err, status.ErrObjectReplaced) {
		t.Errorf("err = %v, want ErrObjectReplaced", err)
	}
	if got := read(t, api, again); len(got.Status.Conditions) != 0 {
		t.Errorf("the new object got conditions meant for the old one: %v", got.Status.Conditions)
	}
}

// TestWriterStopsWhenTheServerAlreadyHoldsItsChanges: after a conflict, if
// another writer already stored the same condition (with its own transition
// time), re-applying changes nothing, so no further patch is sent and the
// object is refreshed to the server's copy.
func TestWriterStopsWhenTheServerAlreadyHoldsItsChanges(t *testing.T) {
	api := env.Client(t)
	created := newWidget(t, api)
	stale := read(t, api, created)

	// Another replica of the same controller got there first.
	other := read(t, api, created)
	status.MarkReady(other, "Reconciled", "", status.WithClock(clocktesting.NewFakePassiveClock(t0)))
	if err := api.Status().Update(t.Context(), other); err != nil {
		t.Fatal(err)
	}

	var n calls
	w := status.NewWriter(countingClient(t, &n, nil), "test-controller")
	changed, err := w.Patch(t.Context(), stale, func() error {
		status.MarkReady(stale, "Reconciled", "", status.WithClock(clocktesting.NewFakePassiveClock(t1)))
		return nil
	})
	if err != nil || changed {
		t.Fatalf("changed=%v err=%v, want false, nil", changed, err)
	}
	if diff := cmp.Diff(map[string]int{"patch/status": 1, "get": 1}, n.Counts()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	got := read(t, api, created)
	if diff := cmp.Diff(got, stale); diff != "" {
		t.Errorf("object after the write differs from the server's (-server +object):\n%s", diff)
	}
	if c, _ := status.FindCondition(got, status.TypeReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready transition time = %v, want the first writer's %v", c.LastTransitionTime, t0)
	}
}
