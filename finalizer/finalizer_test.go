package finalizer_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"

	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

const (
	fooFinalizer  = "test.reconcilekit.io/foo"
	barFinalizer  = "test.reconcilekit.io/bar"
	keepFinalizer = "other.example.com/keep"
)

// newWidget creates a Widget with the given finalizers on the test's API
// server and returns it as stored.
func newWidget(t *testing.T, c client.Client, ns, name string, finalizers ...string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	return w
}

// serverFinalizers reads obj's finalizers from the API server.
func serverFinalizers(t *testing.T, c client.Client, obj client.Object) []string {
	t.Helper()
	w := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), w); err != nil {
		t.Fatalf("get %s: %v", obj.GetName(), err)
	}
	return w.Finalizers
}

func TestAddPersistsOnceThenMakesNoRequests(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	reqs.Snapshot()

	changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, fooFinalizer)
	if err != nil || !changed {
		t.Fatalf("first Add = (%v, %v), want (true, nil)", changed, err)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests of the first Add (-want +got):\n%s", diff)
	}
	want := []string{keepFinalizer, fooFinalizer}
	if diff := cmp.Diff(want, w.Finalizers); diff != "" {
		t.Errorf("obj finalizers after Add (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers after Add (-want +got):\n%s", diff)
	}
	reqs.Snapshot()

	// Repeated calls, on the returned object and on a fresh read, write nothing.
	fresh := &testapi.Widget{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), fresh); err != nil {
		t.Fatal(err)
	}
	reqs.Snapshot()
	for i, obj := range []*testapi.Widget{w, w, fresh} {
		changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, obj, fooFinalizer)
		if err != nil || changed {
			t.Errorf("repeat %d: Add = (%v, %v), want (false, nil)", i, changed, err)
		}
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("repeated Add sent requests %v, want none", got)
	}
}

func TestRemovePersistsOnceThenMakesNoRequests(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", fooFinalizer, keepFinalizer)
	reqs.Snapshot()

	changed, err := finalizer.NewWriter(c, testOwner).Remove(ctx, w, fooFinalizer)
	if err != nil || !changed {
		t.Fatalf("first Remove = (%v, %v), want (true, nil)", changed, err)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests of the first Remove (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers after Remove (-want +got):\n%s", diff)
	}
	reqs.Snapshot()
	for i := range 3 {
		changed, err := finalizer.NewWriter(c, testOwner).Remove(ctx, w, fooFinalizer)
		if err != nil || changed {
			t.Errorf("repeat %d: Remove = (%v, %v), want (false, nil)", i, changed, err)
		}
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("repeated Remove sent requests %v, want none", got)
	}
}

// TestStaleWriterReReadsAndKeepsTheOtherWritersFinalizer makes the conflict
// deterministic: both writers read the object, one writes, then the other
// writes from its stale copy. A plain merge patch or update of the whole
// list would drop the first writer's finalizer.
func TestStaleWriterReReadsAndKeepsTheOtherWritersFinalizer(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	a, b := w.DeepCopy(), w.DeepCopy()

	if _, err := finalizer.NewWriter(c, testOwner).Add(ctx, b, barFinalizer); err != nil {
		t.Fatalf("writer b: %v", err)
	}
	reqs.Snapshot()
	changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, a, fooFinalizer)
	if err != nil || !changed {
		t.Fatalf("stale writer a: Add = (%v, %v), want (true, nil)", changed, err)
	}
	// One rejected patch, one re-read, one accepted patch.
	if diff := cmp.Diff(map[string]int{"patch": 2, "get": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests of the stale writer (-want +got):\n%s", diff)
	}
	want := []string{keepFinalizer, barFinalizer, fooFinalizer}
	if diff := cmp.Diff(want, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}

	// The same for removal: a stale remover keeps what was added meanwhile.
	stale := a.DeepCopy()
	if _, err := finalizer.NewWriter(c, testOwner).Remove(ctx, a, keepFinalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.NewWriter(c, testOwner).Remove(ctx, stale, barFinalizer); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{fooFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers after two stale removals (-want +got):\n%s", diff)
	}
}

func TestARetryOfOneAttemptReturnsTheConflictAndLeavesObjUnchanged(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	stale := w.DeepCopy()
	if _, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, barFinalizer); err != nil {
		t.Fatal(err)
	}

	fw := finalizer.NewWriter(c, testOwner)
	fw.Retry = wait.Backoff{Steps: 1}
	changed, err := fw.Add(ctx, stale, fooFinalizer)
	if changed || !apierrors.IsConflict(err) {
		t.Fatalf("Add = (%v, %v), want (false, a Conflict)", changed, err)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, stale.Finalizers); diff != "" {
		t.Errorf("obj finalizers after a failed write must be as before (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{keepFinalizer, barFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}
}

func TestAPIReaderIsUsedForTheReReadAfterAConflict(t *testing.T) {
	c := env.Client(t)
	reader, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w")
	stale := w.DeepCopy()
	if _, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, barFinalizer); err != nil {
		t.Fatal(err)
	}
	fw := finalizer.NewWriter(c, testOwner)
	fw.APIReader = reader
	if _, err := fw.Add(ctx, stale, fooFinalizer); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"get": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests through the API reader (-want +got):\n%s", diff)
	}
}

func TestAddOnObjectBeingDeletedAddsNothing(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	reqs.Snapshot()

	for _, name := range []string{fooFinalizer, keepFinalizer} {
		changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, w, name)
		if changed || !errors.Is(err, finalizer.ErrDeleting) {
			t.Errorf("Add(%q) = (%v, %v), want (false, ErrDeleting)", name, changed, err)
		}
		// A quiet retry, not an error log: the next attempt takes the
		// deletion path.
		if class, _ := rkerrors.Classify(err); class != rkerrors.ClassConflict {
			t.Errorf("Add(%q) error classed %v, want conflict", name, class)
		}
		if reason := rkerrors.Reason(err); reason != "Deleting" {
			t.Errorf("Add(%q) error has reason %q, want Deleting", name, reason)
		}
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("Add on a deleting object sent requests %v, want none", got)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}
}

func TestAddWhenDeletionBeginsBetweenReadAndWrite(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	read := w.DeepCopy() // the reconciler's read, before deletion starts
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	reqs.Snapshot()

	changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, read, fooFinalizer)
	if changed || !errors.Is(err, finalizer.ErrDeleting) {
		t.Fatalf("Add = (%v, %v), want (false, ErrDeleting)", changed, err)
	}
	if read.DeletionTimestamp.IsZero() {
		t.Errorf("obj was not refreshed from the server: no deletionTimestamp")
	}
	if diff := cmp.Diff(map[string]int{"patch": 1, "get": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}
}

func TestAddWhenObjectIsDeletedBeforeTheWrite(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w")
	read := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil { // no finalizers: gone at once
		t.Fatal(err)
	}

	changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, read, fooFinalizer)
	if changed || !apierrors.IsNotFound(err) {
		t.Fatalf("Add = (%v, %v), want (false, NotFound)", changed, err)
	}
	if client.IgnoreNotFound(err) != nil {
		t.Errorf("client.IgnoreNotFound(%v) must drop it", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after Add: %v, want NotFound: Add must not recreate the object", err)
	}
}

func TestRemoveLastFinalizerLetsTheServerDeleteTheObject(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", fooFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}

	changed, err := finalizer.NewWriter(c, testOwner).Remove(ctx, w, fooFinalizer)
	if err != nil || !changed {
		t.Fatalf("Remove = (%v, %v), want (true, nil)", changed, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after removing the last finalizer: %v, want NotFound", err)
	}
	// Calling again on the now vanished object is a success.
	changed, err = finalizer.NewWriter(c, testOwner).Remove(ctx, w, fooFinalizer)
	if err != nil || changed {
		t.Errorf("Remove again = (%v, %v), want (false, nil)", changed, err)
	}
}

func TestRemoveFromAVanishedObjectIsSuccess(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", fooFinalizer, keepFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	read := w.DeepCopy()
	// Someone else removes every finalizer: the object disappears.
	w.Finalizers = nil
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	changed, err := finalizer.NewWriter(c, testOwner).Remove(ctx, read, fooFinalizer)
	if err != nil || changed {
		t.Fatalf("Remove = (%v, %v), want (false, nil)", changed, err)
	}
}

func TestInvalidNamesAreRejectedBeforeAnyRequest(t *testing.T) {
	tests := []struct {
		name      string
		finalizer string
	}{
		{"empty", ""},
		{"space", "example.com/has space"},
		{"two slashes", "example.com/a/b"},
		{"too long", "example.com/" + string(slices.Repeat([]byte{'a'}, 64))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := finalizer.ValidateName(tt.finalizer); !errors.Is(err, finalizer.ErrInvalidName) {
				t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", tt.finalizer, err)
			}
			c, reqs := countingClient(t)
			changed, err := finalizer.NewWriter(c, testOwner).Add(t.Context(), &testapi.Widget{}, tt.finalizer)
			if changed || !errors.Is(err, finalizer.ErrInvalidName) {
				t.Errorf("Add(%q) = (%v, %v), want (false, ErrInvalidName)", tt.finalizer, changed, err)
			}
			if got := reqs.Snapshot(); len(got) != 0 {
				t.Errorf("requests %v, want none", got)
			}
		})
	}
}

// TestConcurrentWritersNeverLoseAFinalizer runs two writers, each with its
// own client, that add and remove their own finalizer on one object many
// times while the object also carries a third writer's finalizer. After each
// of its calls a writer reads the object from the API server: its own
// finalizer must be exactly where it left it, and the third one must be
// there. A writer whose call gives up after repeated conflicts retries, as
// a requeue would; no call may report success for a write that did not
// stick.
func TestConcurrentWritersNeverLoseAFinalizer(t *testing.T) {
	const iterations = 100
	setup := env.Client(t)
	w := newWidget(t, setup, env.Namespace(t), "w", keepFinalizer)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	var conflicts int
	for _, name := range []string{fooFinalizer, barFinalizer} {
		wg.Go(func() {
			c := env.Client(t)
			ctx := t.Context()
			fail := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				failures = append(failures, fmt.Sprintf("%s: ", name)+fmt.Sprintf(format, args...))
			}
			obj := w.DeepCopy()
			for i := range iterations {
				for _, add := range []bool{true, false} {
					for {
						var err error
						if add {
							_, err = finalizer.NewWriter(c, testOwner).Add(ctx, obj, name)
						} else {
							_, err = finalizer.NewWriter(c, testOwner).Remove(ctx, obj, name)
						}
						if apierrors.IsConflict(err) {
							mu.Lock()
							conflicts++
							mu.Unlock()
							continue
						}
						if err != nil {
							fail("iteration %d add=%v: %v", i, add, err)
							return
						}
						break
					}
					got := &testapi.Widget{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
						fail("get: %v", err)
						return
					}
					if slices.Contains(got.Finalizers, name) != add {
						fail("iteration %d: after add=%v the server has %v", i, add, got.Finalizers)
					}
					if !slices.Contains(got.Finalizers, keepFinalizer) {
						fail("iteration %d: %q lost: %v", i, keepFinalizer, got.Finalizers)
					}
				}
			}
			// End with the finalizer added.
			patient := retry.DefaultRetry
			patient.Steps = 50
			fw := finalizer.NewWriter(c, testOwner)
			fw.Retry = patient
			if _, err := fw.Add(ctx, obj, name); err != nil {
				fail("final Add: %v", err)
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	got := serverFinalizers(t, setup, w)
	slices.Sort(got)
	if diff := cmp.Diff([]string{keepFinalizer, barFinalizer, fooFinalizer}, got); diff != "" {
		t.Errorf("final server finalizers (-want +got):\n%s", diff)
	}
	t.Logf("%d calls gave up after repeated conflicts and were retried", conflicts)
}

func TestValidateNameAcceptsQualifiedNames(t *testing.T) {
	for _, name := range []string{fooFinalizer, "kubernetes", "example.com/a-b_c.d"} {
		if err := finalizer.ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
}

// TestHandBuiltObjectIsReadBeforeItIsWritten covers an object the caller
// built with only a namespace and name: a patch from it would carry no
// resourceVersion, hence no lock, and would replace the stored finalizers.
// Add and Remove read it first.
func TestHandBuiltObjectIsReadBeforeItIsWritten(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	newWidget(t, c, ns, "w", keepFinalizer)
	reqs.Snapshot()

	handBuilt := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	changed, err := finalizer.NewWriter(c, testOwner).Add(ctx, handBuilt, fooFinalizer)
	if err != nil || !changed {
		t.Fatalf("Add = (%v, %v), want (true, nil)", changed, err)
	}
	if diff := cmp.Diff(map[string]int{"get": 1, "patch": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{keepFinalizer, fooFinalizer}, serverFinalizers(t, c, handBuilt)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}

	handBuilt = &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if changed, err := finalizer.NewWriter(c, testOwner).Remove(ctx, handBuilt, fooFinalizer); err != nil || !changed {
		t.Fatalf("Remove = (%v, %v), want (true, nil)", changed, err)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, serverFinalizers(t, c, handBuilt)); diff != "" {
		t.Errorf("server finalizers after Remove (-want +got):\n%s", diff)
	}
}
