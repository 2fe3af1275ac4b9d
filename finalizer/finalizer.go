package finalizer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
)

// ErrDeleting is returned by [Writer.Add] and [Registry.AddMissing] when the
// object is being deleted (it has a deletionTimestamp): no finalizer is ever
// added to such an object (the API server would refuse it anyway). A
// reconciler that sees it should take its deletion path, for example
// [Registry.Finalize]. The errors package classes it as a conflict: when
// deletion began between a reconcile's read and its write, the next attempt,
// moments later and without an error log, sees the deletion.
var ErrDeleting error = deletingError{}

// deletingError is the type of [ErrDeleting]. It states its class to the
// errors package the one way an error of another package does, as an
// errors.Classed error (freshness.StaleError is another).
type deletingError struct{}

var _ rkerrors.Classed = deletingError{}

func (deletingError) Error() string { return "finalizer: object is being deleted" }

// Class is errors.ClassConflict: a quiet, short retry, which takes the
// deletion path.
func (deletingError) Class() rkerrors.Class { return rkerrors.ClassConflict }

// Reason is the condition and log reason of the error.
func (deletingError) Reason() string { return "Deleting" }

// ErrNotDeleting is returned by [Registry.Finalize] when the object has no
// deletionTimestamp: cleanup runs only for objects being deleted.
var ErrNotDeleting = errors.New("finalizer: object is not being deleted")

// ErrInvalidName is wrapped by the error returned for a finalizer name the API
// server would reject (it must be a qualified name such as
// "example.com/cleanup").
var ErrInvalidName = errors.New("finalizer: invalid name")

// ErrInvalidWriter is wrapped by the error of [Writer.Validate] for a Writer
// that cannot write, with the reason.
var ErrInvalidWriter = errors.New("finalizer: invalid Writer")

// Writer adds and removes finalizers of objects with patches of
// metadata.finalizers that carry the operator's field manager and the
// object's resourceVersion (an optimistic lock): another writer's change in
// between makes the API server answer 409 Conflict instead of silently
// dropping that writer's finalizer; the Writer then re-reads the object
// (through APIReader) and tries again (as Retry says). A call that has
// nothing to change makes no request at all, so calling it on every
// reconcile is free.
//
// What it reads of an object, the one given and the one re-read after a
// conflict: its finalizers, deletionTimestamp, resourceVersion, name and
// namespace, all metadata a cache diet keeps; nothing of managedFields.
//
// Build it with [NewWriter], which takes what every write needs; set the
// optional fields before first use. A Writer is safe for concurrent use;
// [Registry.AddMissing] and [Registry.Finalize] write through one.
type Writer struct {
	// APIReader re-reads the object after a conflict. Pass the manager's
	// uncached reader (mgr.GetAPIReader()) when the Writer's client reads
	// from an informer cache: a stale cache would only produce the same
	// conflict again. Nil means the Writer's client.
	APIReader client.Reader
	// Retry says how often, and how fast, a write is retried after a
	// conflict: Retry.Steps is the most patches sent in all. The zero value
	// means client-go's retry.DefaultRetry (k8s.io/client-go/util/retry): 5
	// attempts, 10ms apart, with jitter; a non-zero Retry with Steps 0 makes
	// one attempt. No field may be negative ([Writer.Validate]).
	Retry wait.Backoff

	client     client.Client
	fieldOwner string
}

// NewWriter returns a Writer that patches finalizers through c under the
// field manager fieldOwner: the operator's own name, under which the API
// server records metadata.finalizers in metadata.managedFields. Give every
// write of the operator the same name (drift, status and reconcile take it
// where they are built too), never the client's default (the binary's name,
// "manager" in every kubebuilder project) nor a name another controller
// uses. With an empty fieldOwner every call fails with
// errors.ErrNoFieldOwner, sends nothing and runs no cleanup.
func NewWriter(c client.Client, fieldOwner string) *Writer {
	return &Writer{client: c, fieldOwner: fieldOwner}
}

// Validate reports a Writer that cannot write: the zero Writer (no client),
// an empty field owner (the error also wraps errors.ErrNoFieldOwner), or a
// negative field of Retry. The error wraps [ErrInvalidWriter]. Every call
// of the Writer, and of a [Registry] given it, calls Validate first and
// returns its error, classed permanent, before it sends anything or runs any
// cleanup, also when there would be nothing to write: the mistake shows on
// the first reconcile, not on the deletion that would then be stuck behind
// its finalizer. Call it while setting up to fail early.
func (w *Writer) Validate() error {
	switch {
	case w == nil:
		return fmt.Errorf("%w: nil", ErrInvalidWriter)
	case w.client == nil:
		return fmt.Errorf("%w: no client: build it with finalizer.NewWriter(c, fieldOwner)", ErrInvalidWriter)
	case w.fieldOwner == "":
		return fmt.Errorf("%w: %w: build it with finalizer.NewWriter(c, fieldOwner), fieldOwner the operator's own name, the same for all its writes", ErrInvalidWriter, rkerrors.ErrNoFieldOwner)
	case w.Retry.Steps < 0 || w.Retry.Duration < 0 || w.Retry.Factor < 0 || w.Retry.Jitter < 0 || w.Retry.Cap < 0:
		return fmt.Errorf("%w: Retry has a negative field: %+v", ErrInvalidWriter, w.Retry)
	}
	return nil
}

// check validates w for a call that does what to obj; the error is
// permanent.
func (w *Writer) check(what string, obj client.Object) error {
	if err := w.Validate(); err != nil {
		return rkerrors.Permanent(fmt.Errorf("%s %s: %w", what, describe(obj), err))
	}
	return nil
}

func (w *Writer) reader() client.Reader {
	if w.APIReader != nil {
		return w.APIReader
	}
	return w.client
}

func (w *Writer) backoff() wait.Backoff {
	b := w.Retry
	if b == (wait.Backoff{}) {
		b = retry.DefaultRetry
	}
	b.Steps = max(b.Steps, 1)
	return b
}

// ValidateName reports whether name can be stored in metadata.finalizers: it
// must be a qualified name ("example.com/cleanup"). The error wraps
// [ErrInvalidName].
func ValidateName(name string) error {
	if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidName, name, msgs[0])
	}
	return nil
}

// Add adds the finalizer name to obj and persists it with a patch, unless
// obj already has it (then it makes no request at all and returns false).
//
// The patch carries obj's resourceVersion, so it cannot overwrite a finalizer
// another writer added or removed meanwhile; on a conflict Add re-reads the
// object (through APIReader) and tries again (as Retry says). obj is updated
// with what the server stored. An obj without a resourceVersion (built by
// hand from a name) is read from the server first.
//
// Add never adds a finalizer to an object being deleted: it returns
// [ErrDeleting] when obj, as given or as re-read, has a deletionTimestamp,
// even if the finalizer is there: the caller belongs on its deletion path.
// When the object no longer exists the error satisfies
// apierrors.IsNotFound (so client.IgnoreNotFound drops it). A Writer that
// [Writer.Validate] refuses returns its error and sends nothing.
func (w *Writer) Add(ctx context.Context, obj client.Object, name string) (changed bool, err error) {
	if err := w.check(fmt.Sprintf("adding finalizer %q to", name), obj); err != nil {
		return false, err
	}
	// The hot path of every reconcile: present, so valid (the server stored
	// it), and nothing to write.
	if obj.GetResourceVersion() != "" && !deleting(obj) && slices.Contains(obj.GetFinalizers(), name) {
		return false, nil
	}
	if err := ValidateName(name); err != nil {
		return false, err
	}
	return w.write(ctx, obj, func(current []string) ([]string, error) {
		if deleting(obj) {
			return nil, fmt.Errorf("adding finalizer %q to %s: %w", name, describe(obj), ErrDeleting)
		}
		if slices.Contains(current, name) {
			return nil, nil
		}
		return append(slices.Clip(current), name), nil
	})
}

// Remove removes the finalizer name from obj and persists it with a patch,
// unless obj does not have it (then it makes no request and returns false).
// Like [Writer.Add] it re-reads and retries on a conflict, so it never drops
// a finalizer another writer added meanwhile.
//
// An object that no longer exists has no finalizers: Remove then returns
// (false, nil). Removing the last finalizer of an object being deleted lets
// the API server delete it; obj then holds the object's final state. A
// Writer that [Writer.Validate] refuses returns its error and sends nothing.
func (w *Writer) Remove(ctx context.Context, obj client.Object, name string) (changed bool, err error) {
	if err := w.check(fmt.Sprintf("removing finalizer %q from", name), obj); err != nil {
		return false, err
	}
	if obj.GetResourceVersion() != "" && !slices.Contains(obj.GetFinalizers(), name) {
		return false, nil
	}
	changed, err = w.write(ctx, obj, func(current []string) ([]string, error) {
		if !slices.Contains(current, name) {
			return nil, nil
		}
		return slices.DeleteFunc(slices.Clone(current), func(s string) bool { return s == name }), nil
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return changed, err
}

// write applies edit to obj's finalizers and patches the result with an
// optimistic lock, re-reading and retrying on conflicts. edit returns nil
// finalizers and no error when nothing needs writing. It reports whether a
// patch succeeded.
func (w *Writer) write(ctx context.Context, obj client.Object, edit func(current []string) ([]string, error)) (bool, error) {
	// An object without a resourceVersion was built by hand: its finalizers
	// say nothing about the server's, and a patch from it would carry no
	// precondition. Read it first.
	reread := obj.GetResourceVersion() == ""
	changed := false
	err := retry.OnError(w.backoff(), apierrors.IsConflict, func() error {
		if reread {
			if err := w.reader().Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return fmt.Errorf("reading %s: %w", describe(obj), err)
			}
		}
		current := obj.GetFinalizers()
		next, err := edit(current)
		if err != nil || next == nil {
			return err
		}
		base := obj.DeepCopyObject().(client.Object)
		obj.SetFinalizers(next)
		if err := w.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(w.fieldOwner)); err != nil {
			// Leave obj as it was: it must not claim finalizers the
			// server does not have.
			obj.SetFinalizers(current)
			reread = true
			return fmt.Errorf("patching finalizers of %s: %w", describe(obj), err)
		}
		changed = true
		return nil
	})
	return changed, err
}

func deleting(obj client.Object) bool {
	return !obj.GetDeletionTimestamp().IsZero()
}

func describe(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%q", ns+"/"+obj.GetName())
	}
	return fmt.Sprintf("%q", obj.GetName())
}
