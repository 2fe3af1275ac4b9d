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

// ErrDeleting is returned by [Add] and [Registry.AddAll] when the object is
// being deleted (it has a deletionTimestamp): no finalizer is ever added to
// such an object (the API server would refuse it anyway). A reconciler that
// sees it should take its deletion path, for example [Registry.Run]. The
// errors package classes it as a conflict (its Class method says so): when
// deletion began between a reconcile's read and its write, the next attempt,
// moments later and without an error log, sees the deletion.
var ErrDeleting error = &classedError{msg: "finalizer: object is being deleted", class: rkerrors.ClassConflict}

// classedError is a sentinel that states its class to the errors package.
type classedError struct {
	msg   string
	class rkerrors.Class
}

func (e *classedError) Error() string { return e.msg }

// Class is the class the errors package gives the sentinel.
func (e *classedError) Class() rkerrors.Class { return e.class }

// ErrNotDeleting is returned by [Registry.Run] when the object has no
// deletionTimestamp: cleanup runs only for objects being deleted.
var ErrNotDeleting = errors.New("finalizer: object is not being deleted")

// ErrInvalidName is wrapped by the error returned for a finalizer name the API
// server would reject (it must be a qualified name such as
// "example.com/cleanup").
var ErrInvalidName = errors.New("finalizer: invalid name")

// ErrNoFieldOwner is returned, wrapped and classed permanent
// (errors.Permanent, so also a controller-runtime terminal error), by [Add],
// [Remove], [Registry.AddAll] and [Registry.Run] called without
// [WithFieldOwner], before they send anything or run any cleanup, also when
// there is nothing to write: the mistake shows on the first reconcile, not
// on the deletion that would then be stuck behind its finalizer.
var ErrNoFieldOwner = errors.New("finalizer: no field owner")

// Option changes how a write is made.
type Option func(*options)

type options struct {
	reader     client.Reader
	backoff    wait.Backoff
	fieldOwner string
}

// WithFieldOwner names the operator: the field manager of every patch of
// metadata.finalizers, under which the API server records them in
// metadata.managedFields. Required by every call of the package (without
// it, [ErrNoFieldOwner]). Use the name the operator's other writes carry
// (drift.WithFieldOwner, status.Writer.FieldOwner; reconcile.Loop passes
// its FieldOwner here), never one another controller uses.
func WithFieldOwner(name string) Option {
	return func(o *options) { o.fieldOwner = name }
}

// WithAPIReader makes the re-read after a conflict go through r. Pass the
// manager's uncached reader (mgr.GetAPIReader()) when c reads from an
// informer cache: a stale cache would only produce the same conflict again.
// The default is the client given to the call.
func WithAPIReader(r client.Reader) Option {
	return func(o *options) { o.reader = r }
}

// WithRetry sets how often and how fast a write is retried after a
// conflict. The default is client-go's retry.DefaultRetry
// (k8s.io/client-go/util/retry): 5 attempts, 10ms apart, with jitter. A
// backoff with Steps < 1 makes exactly one attempt.
func WithRetry(b wait.Backoff) Option {
	return func(o *options) { o.backoff = b }
}

// newOptions resolves the options of a call that does what for obj; a call
// without a field owner is an error.
func newOptions(c client.Reader, opts []Option, what string, obj client.Object) (options, error) {
	o := options{reader: c, backoff: retry.DefaultRetry}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.backoff.Steps < 1 {
		o.backoff.Steps = 1
	}
	if o.fieldOwner == "" {
		return o, rkerrors.Permanent(fmt.Errorf("%s %s: %w: pass finalizer.WithFieldOwner(name), the operator's own name, the same for all its writes",
			what, describe(obj), ErrNoFieldOwner))
	}
	return o, nil
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
// object (see [WithAPIReader]) and tries again (see [WithRetry]). obj is
// updated with what the server stored. An obj without a resourceVersion
// (built by hand from a name) is read from the server first.
//
// Add never adds a finalizer to an object being deleted: it returns
// [ErrDeleting] when obj, as given or as re-read, has a deletionTimestamp,
// even if the finalizer is there: the caller belongs on its deletion path.
// When the object no longer exists the error satisfies
// apierrors.IsNotFound (so client.IgnoreNotFound drops it). Without
// [WithFieldOwner] it returns [ErrNoFieldOwner].
func Add(ctx context.Context, c client.Client, obj client.Object, name string, opts ...Option) (changed bool, err error) {
	o, err := newOptions(c, opts, fmt.Sprintf("adding finalizer %q to", name), obj)
	if err != nil {
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
	return write(ctx, c, obj, o, func(current []string) ([]string, error) {
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
// Like [Add] it re-reads and retries on a conflict, so it never drops a
// finalizer another writer added meanwhile.
//
// An object that no longer exists has no finalizers: Remove then returns
// (false, nil). Removing the last finalizer of an object being deleted lets
// the API server delete it; obj then holds the object's final state.
// Without [WithFieldOwner] it returns [ErrNoFieldOwner].
func Remove(ctx context.Context, c client.Client, obj client.Object, name string, opts ...Option) (changed bool, err error) {
	o, err := newOptions(c, opts, fmt.Sprintf("removing finalizer %q from", name), obj)
	if err != nil {
		return false, err
	}
	if obj.GetResourceVersion() != "" && !slices.Contains(obj.GetFinalizers(), name) {
		return false, nil
	}
	changed, err = write(ctx, c, obj, o, func(current []string) ([]string, error) {
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
func write(ctx context.Context, c client.Client, obj client.Object, o options, edit func(current []string) ([]string, error)) (bool, error) {
	// An object without a resourceVersion was built by hand: its finalizers
	// say nothing about the server's, and a patch from it would carry no
	// precondition. Read it first.
	reread := obj.GetResourceVersion() == ""
	changed := false
	err := retry.OnError(o.backoff, apierrors.IsConflict, func() error {
		if reread {
			if err := o.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
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
		if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(o.fieldOwner)); err != nil {
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
