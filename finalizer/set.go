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
// failure, a conflict or a restart of the controller.
type Finalizer interface {
	Finalize(ctx context.Context, obj client.Object) error
}

// Func adapts a function to [Finalizer].
type Func func(ctx context.Context, obj client.Object) error

// Finalize calls f.
func (f Func) Finalize(ctx context.Context, obj client.Object) error { return f(ctx, obj) }

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

// Result says what [Set.Run] did.
type Result struct {
	// Removed lists, in run order, the finalizers whose cleanup succeeded
	// and that this call removed from the object.
	Removed []string
	// Remaining lists, in run order, the Set's finalizers still on the
	// object. It is empty once the Set is done with the object.
	Remaining []string
}

// Done reports whether none of the Set's finalizers remain on the object.
func (r Result) Done() bool { return len(r.Remaining) == 0 }

// Set is an ordered collection of named finalizers. Cleanups run in the
// order the finalizers were registered, one at a time, and stop at the first
// failure, so a finalizer may rely on every earlier one having completed.
//
// The zero value is an empty Set ready to use. Register finalizers while
// setting up; a Set is safe for concurrent use by several reconciles.
type Set struct {
	mu      sync.RWMutex
	entries []entry
}

type entry struct {
	name string
	f    Finalizer
}

// Register appends the finalizer name, cleaned up by f, to the Set. It
// returns an error, and changes nothing, when name is not a valid finalizer
// name (see [ValidateName]), is already registered, or f is nil.
func (s *Set) Register(name string, f Finalizer) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("registering finalizer %q: nil Finalizer", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.entries, func(e entry) bool { return e.name == name }) {
		return fmt.Errorf("registering finalizer %q: already registered", name)
	}
	s.entries = append(s.entries, entry{name: name, f: f})
	return nil
}

// Names returns the registered finalizer names in run order.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, len(s.entries))
	for i, e := range s.entries {
		names[i] = e.name
	}
	return names
}

// EnsureAll adds every registered finalizer that obj lacks, in one patch, in
// registration order; like [Ensure] it makes no request when nothing is
// missing, never drops another writer's finalizer, and returns [ErrDeleting]
// for an object being deleted. Call it on the not-deleted path of a
// reconcile, before creating anything that will need cleaning up.
func (s *Set) EnsureAll(ctx context.Context, c client.Client, obj client.Object, opts ...Option) (changed bool, err error) {
	s.mu.RLock()
	missing := slices.ContainsFunc(s.entries, func(e entry) bool { return !slices.Contains(obj.GetFinalizers(), e.name) })
	s.mu.RUnlock()
	if !missing && !deleting(obj) && obj.GetResourceVersion() != "" {
		return false, nil // the hot path: nothing to write
	}
	names := s.Names()
	return write(ctx, c, obj, newOptions(c, opts), func(current []string) ([]string, error) {
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

// Run is the deletion path of a reconcile: for an object with a
// deletionTimestamp it runs, in registration order, the cleanup of each
// registered finalizer the object still has, stopping at the first failure,
// and then removes the finalizers whose cleanup succeeded in one patch that
// cannot drop another writer's finalizer (see [Remove]). Finalizers on the
// object that the Set does not know are left alone.
//
// A failed cleanup keeps its finalizer (and those after it) and is returned
// as a [*CleanupError] wrapping the cause, joined with the patch error if
// removing the earlier ones failed too. An object that vanishes (NotFound) is
// done: Run then returns a Result with nothing remaining and no error.
// Run returns [ErrNotDeleting], without running anything, for an object that
// is not being deleted.
func (s *Set) Run(ctx context.Context, c client.Client, obj client.Object, opts ...Option) (Result, error) {
	if !deleting(obj) {
		return Result{}, fmt.Errorf("running finalizers of %s: %w", describe(obj), ErrNotDeleting)
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
	_, patchErr := write(ctx, c, obj, newOptions(c, opts), func(current []string) ([]string, error) {
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
		return Result{}, cleanupErr
	}
	if patchErr != nil {
		removed = nil
	}
	res := Result{Removed: removed}
	for _, e := range entries {
		if slices.Contains(obj.GetFinalizers(), e.name) {
			res.Remaining = append(res.Remaining, e.name)
		}
	}
	return res, errors.Join(cleanupErr, patchErr)
}
