package finalizer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

const (
	dnsFinalizer     = "test.reconcilekit.io/dns"
	bucketFinalizer  = "test.reconcilekit.io/bucket"
	networkFinalizer = "test.reconcilekit.io/network"
)

// recorder is a set of finalizers whose cleanups record the order they ran
// in and fail while fail[name] holds an error.
type recorder struct {
	ran  []string
	fail map[string]error
}

func (r *recorder) set(t *testing.T, names ...string) *finalizer.Registry[client.Object] {
	t.Helper()
	s := &finalizer.Registry[client.Object]{}
	for _, n := range names {
		err := s.Register(n, finalizer.Func[client.Object](func(ctx context.Context, obj client.Object) error {
			r.ran = append(r.ran, n)
			return r.fail[n]
		}))
		if err != nil {
			t.Fatalf("register %q: %v", n, err)
		}
	}
	return s
}

// deleted deletes obj on the server and reads it back with its
// deletionTimestamp.
func deleted(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Delete(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
}

func TestRunCleansUpInRegistrationOrderAndLeavesForeignFinalizers(t *testing.T) {
	c, reqs := countingClient(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	rec := &recorder{}
	// Registration order on purpose differs from alphabetical order.
	s := rec.set(t, networkFinalizer, dnsFinalizer, bucketFinalizer)
	if diff := cmp.Diff([]string{networkFinalizer, dnsFinalizer, bucketFinalizer}, s.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}

	reqs.Snapshot()
	changed, err := s.AddMissing(ctx, finalizer.NewWriter(c, testOwner), w)
	if err != nil || !changed {
		t.Fatalf("AddAll = (%v, %v), want (true, nil)", changed, err)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("AddAll adds all missing finalizers in one patch (-want +got):\n%s", diff)
	}
	want := []string{keepFinalizer, networkFinalizer, dnsFinalizer, bucketFinalizer}
	if diff := cmp.Diff(want, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers after AddAll (-want +got):\n%s", diff)
	}
	reqs.Snapshot()
	changed, err = s.AddMissing(ctx, finalizer.NewWriter(c, testOwner), w)
	if err != nil || changed {
		t.Errorf("second AddAll = (%v, %v), want (false, nil)", changed, err)
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("second AddAll sent requests %v, want none", got)
	}

	deleted(t, c, w)
	reqs.Snapshot()
	res, err := s.Finalize(ctx, finalizer.NewWriter(c, testOwner), w)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(s.Names(), rec.ran); diff != "" {
		t.Errorf("cleanup order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(finalizer.Outcome{Removed: s.Names()}, res); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if !res.Done() {
		t.Errorf("Done() = false, want true")
	}
	if diff := cmp.Diff(map[string]int{"patch": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("Run removes all finished finalizers in one patch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{keepFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers after Run (-want +got):\n%s", diff)
	}

	// Nothing left for the Registry: a second Run is free and runs nothing.
	rec.ran = nil
	reqs.Snapshot()
	res, err = s.Finalize(ctx, finalizer.NewWriter(c, testOwner), w)
	if err != nil || !res.Done() || len(rec.ran) != 0 {
		t.Errorf("second Run = (%+v, %v) ran %v, want done, nil, nothing ran", res, err, rec.ran)
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("second Run sent requests %v, want none", got)
	}
}

func TestRunFailingCleanupKeepsItsFinalizerAndReturnsTheCause(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w")
	cause := apierrors.NewServiceUnavailable("bucket service down")
	rec := &recorder{fail: map[string]error{dnsFinalizer: cause}}
	s := rec.set(t, networkFinalizer, dnsFinalizer, bucketFinalizer)
	if _, err := s.AddMissing(ctx, finalizer.NewWriter(c, testOwner), w); err != nil {
		t.Fatal(err)
	}
	deleted(t, c, w)

	res, err := s.Finalize(ctx, finalizer.NewWriter(c, testOwner), w)
	var cleanupErr *finalizer.CleanupError
	if !errors.As(err, &cleanupErr) || cleanupErr.Name != dnsFinalizer {
		t.Fatalf("Run error = %v, want a *CleanupError for %q", err, dnsFinalizer)
	}
	if !errors.Is(err, cause) || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("Run error %v does not wrap its cause", err)
	}
	if diff := cmp.Diff([]string{networkFinalizer, dnsFinalizer}, rec.ran); diff != "" {
		t.Errorf("cleanups that ran: a failure stops the later ones (-want +got):\n%s", diff)
	}
	wantRes := finalizer.Outcome{Removed: []string{networkFinalizer}, Remaining: []string{dnsFinalizer, bucketFinalizer}}
	if diff := cmp.Diff(wantRes, res); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{dnsFinalizer, bucketFinalizer}, serverFinalizers(t, c, w)); diff != "" {
		t.Errorf("server finalizers (-want +got):\n%s", diff)
	}

	// Once the cause is fixed the next Run finishes and the object is gone.
	rec.fail, rec.ran = nil, nil
	res, err = s.Finalize(ctx, finalizer.NewWriter(c, testOwner), w)
	if err != nil || !res.Done() {
		t.Fatalf("Run after the fix = (%+v, %v), want done", res, err)
	}
	if diff := cmp.Diff([]string{dnsFinalizer, bucketFinalizer}, rec.ran); diff != "" {
		t.Errorf("cleanups that ran after the fix (-want +got):\n%s", diff)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &testapi.Widget{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the last finalizer was removed: %v, want NotFound", err)
	}
}

func TestRunCleanupErrorKeepsTerminalCauseVisible(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w")
	rec := &recorder{fail: map[string]error{dnsFinalizer: reconcile.TerminalError(errors.New("zone is locked"))}}
	s := rec.set(t, dnsFinalizer)
	if _, err := s.AddMissing(ctx, finalizer.NewWriter(c, testOwner), w); err != nil {
		t.Fatal(err)
	}
	deleted(t, c, w)
	_, err := s.Finalize(ctx, finalizer.NewWriter(c, testOwner), w)
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Errorf("errors.Is(%v, reconcile.TerminalError(nil)) = false, want true", err)
	}
}

func TestRunOnObjectNotBeingDeletedRunsNothing(t *testing.T) {
	c, reqs := countingClient(t)
	w := newWidget(t, c, env.Namespace(t), "w", dnsFinalizer)
	rec := &recorder{}
	s := rec.set(t, dnsFinalizer)
	reqs.Snapshot()

	_, err := s.Finalize(t.Context(), finalizer.NewWriter(c, testOwner), w)
	if !errors.Is(err, finalizer.ErrNotDeleting) {
		t.Errorf("Run error = %v, want ErrNotDeleting", err)
	}
	if len(rec.ran) != 0 {
		t.Errorf("cleanups ran on an object that is not being deleted: %v", rec.ran)
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("Run sent requests %v, want none", got)
	}
}

func TestRunWhenTheObjectVanishesIsDone(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	w := newWidget(t, c, env.Namespace(t), "w", dnsFinalizer)
	deleted(t, c, w)
	read := w.DeepCopy()
	// Someone else removes the finalizer first: the object is gone.
	w.Finalizers = nil
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	res, err := rec.set(t, dnsFinalizer).Finalize(ctx, finalizer.NewWriter(c, testOwner), read)
	if err != nil || !res.Done() {
		t.Errorf("Run = (%+v, %v), want done and no error", res, err)
	}
}

func TestAddAllOnObjectBeingDeletedAddsNothing(t *testing.T) {
	c, reqs := countingClient(t)
	w := newWidget(t, c, env.Namespace(t), "w", keepFinalizer)
	deleted(t, c, w)
	rec := &recorder{}
	reqs.Snapshot()
	changed, err := rec.set(t, dnsFinalizer).AddMissing(t.Context(), finalizer.NewWriter(c, testOwner), w)
	if changed || !errors.Is(err, finalizer.ErrDeleting) {
		t.Errorf("AddAll = (%v, %v), want (false, ErrDeleting)", changed, err)
	}
	if got := reqs.Snapshot(); len(got) != 0 {
		t.Errorf("AddAll sent requests %v, want none", got)
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	noop := finalizer.Func[client.Object](func(context.Context, client.Object) error { return nil })
	tests := []struct {
		name      string
		finalizer string
		f         finalizer.Finalizer[client.Object]
		wantIs    error
	}{
		{name: "invalid name", finalizer: "not valid/x/y", f: noop, wantIs: finalizer.ErrInvalidName},
		{name: "duplicate", finalizer: dnsFinalizer, f: noop},
		{name: "nil finalizer", finalizer: bucketFinalizer, f: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s finalizer.Registry[client.Object]
			if err := s.Register(dnsFinalizer, noop); err != nil {
				t.Fatal(err)
			}
			err := s.Register(tt.finalizer, tt.f)
			if err == nil {
				t.Fatalf("Register(%q) = nil, want an error", tt.finalizer)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Register(%q) = %v, want errors.Is %v", tt.finalizer, err, tt.wantIs)
			}
			if diff := cmp.Diff([]string{dnsFinalizer}, s.Names()); diff != "" {
				t.Errorf("a rejected Register changed the Registry (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCleanupErrorIsClassifiedByItsCause proves the errors package sees
// through a failed cleanup to what caused it.
func TestCleanupErrorIsClassifiedByItsCause(t *testing.T) {
	tests := []struct {
		name      string
		cause     error
		wantClass rkerrors.Class
		wantDelay time.Duration
	}{
		{"unavailable dependency", apierrors.NewServiceUnavailable("down"), rkerrors.ClassTransient, 0},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "buckets"}, "b", errors.New("changed")), rkerrors.ClassConflict, 0},
		{"permanent marker", rkerrors.Permanent(errors.New("bucket name taken")), rkerrors.ClassPermanent, 0},
		{"terminal error", reconcile.TerminalError(errors.New("zone locked")), rkerrors.ClassPermanent, 0},
		{"retry after", rkerrors.RetryAfter(errors.New("rate limited"), 7*time.Second), rkerrors.ClassThrottled, 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("reconcile: %w", &finalizer.CleanupError{Name: dnsFinalizer, Err: tt.cause})
			class, delay := rkerrors.Classify(err)
			if class != tt.wantClass || delay != tt.wantDelay {
				t.Errorf("Classify = (%v, %v), want (%v, %v)", class, delay, tt.wantClass, tt.wantDelay)
			}
		})
	}
}
