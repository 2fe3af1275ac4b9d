package finalizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finalizer cleans up what an object being deleted holds outside of the
// API server's garbage collection (cloud resources, DNS records, children in
// other namespaces). Finalize must be idempotent: it runs again after a
// failure, a conflict or a restart of the controller. T is the object's type
// (a pointer type such as *v1.Widget), or client.Object for any object.
type Finalizer[T client.Object] interface {
	Finalize(ctx context.Context, obj T) error
}

// Func adapts a function to [Finalizer].
type Func[T client.Object] func(ctx context.Context, obj T) error

// Finalize calls f.
func (f Func[T]) Finalize(ctx context.Context, obj T) error { return f(ctx, obj) }

// CleanupError reports a [Finalizer] that failed; its finalizer stays on the
// object. It unwraps to the cause, so errors.Is, errors.As and the errors
// package's Classify see what went wrong.
type CleanupError struct {
	// Name is the finalizer whose cleanup failed.
	Name string
	// Err is what Finalize returned.
	Err error
}

// Error names the finalizer and the cause.
func (e *CleanupError) Error() string {
	return fmt.Sprintf("finalizer %q: cleanup failed: %v", e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *CleanupError) Unwrap() error { return e.Err }

// Outcome says what [Registry.Finalize] did.
type Outcome struct {
	// Removed lists, in run order, the finalizers whose cleanup succeeded
	// and that this call removed from the object.
	Removed []string
	// Remaining lists, in run order, the Registry's finalizers still on the
	// object. It is empty once the Registry is done with the object.
	Remaining []string
}

// Done reports whether none of the Registry's finalizers remain on the
// object.
func (r Outcome) Done() bool { return len(r.Remaining) == 0 }

// Registry is an ordered collection of named finalizers for objects of type
// T. Cleanups run in the order the finalizers were registered, one at a
// time, and stop at the first failure, so a finalizer may rely on every
// earlier one having completed.
//
// The zero value is an empty Registry ready to use. Register finalizers
// while setting up; a Registry is safe for concurrent use by several
// reconciles.
type Registry[T client.Object] struct {
	mu      sync.RWMutex
	entries []entry[T]
}

type entry[T client.Object] struct {
	name string
	f    Finalizer[T]
}

// Register appends the finalizer name, cleaned up by f, to the Registry. It
// returns an error, and changes nothing, when name is not a valid finalizer
// name (see [ValidateName]), is already registered, or f is nil.
func (s *Registry[T]) Register(name string, f Finalizer[T]) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("finalizer: registering %q: nil Finalizer", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.entries, func(e entry[T]) bool { return e.name == name }) {
		return fmt.Errorf("finalizer: registering %q: already registered", name)
	}
	s.entries = append(s.entries, entry[T]{name: name, f: f})
	return nil
}

// Names returns the registered finalizer names in run order.
func (s *Registry[T]) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, len(s.entries))
	for i, e := range s.entries {
		names[i] = e.name
	}
	return names
}

// AddMissing adds every registered finalizer that obj lacks, in one patch
// through w, in registration order; like [Writer.Add] it makes no request
// when nothing is missing, never drops another writer's finalizer, and
// returns [ErrDeleting] for an object being deleted. Call it on the
// not-deleted path of a reconcile, before creating anything that will need
// cleaning up. A Writer that [Writer.Validate] refuses returns its error and
// sends nothing.
func (s *Registry[T]) AddMissing(ctx context.Context, w *Writer, obj T) (changed bool, err error) {
	if err := w.check("adding finalizers to", obj); err != nil {
		return false, err
	}
	s.mu.RLock()
	missing := slices.ContainsFunc(s.entries, func(e entry[T]) bool { return !slices.Contains(obj.GetFinalizers(), e.name) })
	s.mu.RUnlock()
	if !missing && !deleting(obj) && obj.GetResourceVersion() != "" {
		return false, nil // the hot path: nothing to write
	}
	names := s.Names()
	return w.write(ctx, obj, func(current []string) ([]string, error) {
		var missing []string
		for _, n := range names {
			if !slices.Contains(current, n) {
				missing = append(missing, n)
			}
		}
		if deleting(obj) {
			if len(missing) == 0 {
				return nil, fmt.Errorf("ensuring finalizers of %s: %w", describe(obj), ErrDeleting)
			}
			return nil, fmt.Errorf("adding finalizers %q to %s: %w", missing, describe(obj), ErrDeleting)
		}
		if len(missing) == 0 {
			return nil, nil
		}
		return append(slices.Clip(current), missing...), nil
	})
}

// Finalize is the deletion path of a reconcile: for an object with a
// deletionTimestamp it runs, in registration order, the cleanup of each
// registered finalizer the object still has, stopping at the first failure,
// and then removes the finalizers whose cleanup succeeded in one patch that
// cannot drop another writer's finalizer, through w (see [Writer.Remove]). Finalizers on the
// object that the Registry does not know are left alone.
//
// A failed cleanup keeps its finalizer (and those after it) and is returned
// as a [*CleanupError] wrapping the cause, joined with the patch error if
// removing the earlier ones failed too. An object that vanishes (NotFound) is
// done: Finalize then returns an Outcome with nothing remaining and no
// error. Finalize returns [ErrNotDeleting], without running anything, for
// an object that is not being deleted, and the error of a Writer that
// [Writer.Validate] refuses, without running anything.
func (s *Registry[T]) Finalize(ctx context.Context, w *Writer, obj T) (Outcome, error) {
	if err := w.check("running finalizers of", obj); err != nil {
		return Outcome{}, err
	}
	if !deleting(obj) {
		return Outcome{}, fmt.Errorf("running finalizers of %s: %w", describe(obj), ErrNotDeleting)
	}
	s.mu.RLock()
	entries := slices.Clone(s.entries)
	s.mu.RUnlock()

	var succeeded []string
	var cleanupErr error
	for _, e := range entries {
		if !slices.Contains(obj.GetFinalizers(), e.name) {
			continue
		}
		if err := e.f.Finalize(ctx, obj); err != nil {
			cleanupErr = &CleanupError{Name: e.name, Err: err}
			break
		}
		succeeded = append(succeeded, e.name)
	}

	var removed []string
	_, patchErr := w.write(ctx, obj, func(current []string) ([]string, error) {
		removed = removed[:0]
		next := slices.DeleteFunc(slices.Clone(current), func(n string) bool {
			if slices.Contains(succeeded, n) {
				removed = append(removed, n)
				return true
			}
			return false
		})
		if len(removed) == 0 {
			return nil, nil
		}
		return next, nil
	})
	if apierrors.IsNotFound(patchErr) {
		// The object is gone, and with it every finalizer: someone else
		// removed the last one. A failed cleanup is still reported.
		return Outcome{}, cleanupErr
	}
	if patchErr != nil {
		removed = nil
	}
	res := Outcome{Removed: removed}
	for _, e := range entries {
		if slices.Contains(obj.GetFinalizers(), e.name) {
			res.Remaining = append(res.Remaining, e.name)
		}
	}
	return res, errors.Join(cleanupErr, patchErr)
}
