package drift

import (
	"context"

	"github.com/google/go-cmp/cmp"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/errors"
)

// The names below moved to package compare, or gave way to a Writer built
// with NewWriter. Each still works as it did, for one minor version.

// Comparison is the outcome of a comparison.
//
// Deprecated: use [compare.Comparison], the same type.
type Comparison = compare.Comparison

// ErrNotComparable is [compare.ErrNotComparable]: errors.Is matches either.
//
// Deprecated: use [compare.ErrNotComparable].
var ErrNotComparable = compare.ErrNotComparable

// ErrInvalidPath is [compare.ErrInvalidPath]: errors.Is matches either.
//
// Deprecated: use [compare.ErrInvalidPath].
var ErrInvalidPath = compare.ErrInvalidPath

// ErrNoFieldOwner is [errors.ErrNoFieldOwner], the library's one error of a
// write without a field owner: errors.Is matches either.
//
// Deprecated: use [errors.ErrNoFieldOwner].
var ErrNoFieldOwner = errors.ErrNoFieldOwner

// Diff compares desired against actual as [compare.Diff] does with the
// built-in [compare.KubernetesRules] and client-go's scheme, as it always
// did; the options that shape a write are ignored.
//
// Deprecated: use [compare.Diff] with compare.Rules(compare.KubernetesRules()...),
// compare.WithScheme(scheme) and the options of package compare.
func Diff(desired, actual any, opts ...Option) (Comparison, error) {
	cfg := newConfig(opts)
	copts := make([]compare.Option, 0, 3+len(cfg.compare))
	copts = append(copts, kubernetesRules, compare.WithScheme(clientgoscheme.Scheme))
	copts = append(copts, cfg.compare...)
	if cfg.fieldOwner != "" {
		copts = append(copts, compare.WithFieldOwner(cfg.fieldOwner))
	}
	return compare.Diff(desired, actual, copts...)
}

// WithFieldOwner names the field owner of the deprecated package-level
// [Ensure], [EnsureMutate] and [EnsureApplied], and of [Diff]. A [Writer]
// ignores it: its field owner is the one [NewWriter] got.
//
// Deprecated: build a Writer with NewWriter(c, name), which cannot be built
// without a name by mistake; for compare.Diff, use [compare.WithFieldOwner].
func WithFieldOwner(name string) Option {
	return func(c *config) { c.fieldOwner = name }
}

// IgnorePaths is [compare.IgnorePaths] as an Option of this package.
//
// Deprecated: use CompareOptions(compare.IgnorePaths(paths...)).
func IgnorePaths(paths ...string) Option {
	return CompareOptions(compare.IgnorePaths(paths...))
}

// CompareStatus is [compare.IncludeStatus] as an Option of this package,
// for the deprecated [Diff]; a Writer ignores it (status belongs to the
// status subresource, and a Writer never compares or writes it).
//
// Deprecated: to compare status, call compare.Diff with
// [compare.IncludeStatus]. There is no form for a Writer: it never compares
// status, and CompareOptions(compare.IncludeStatus()) is ignored too.
func CompareStatus() Option {
	return CompareOptions(compare.IncludeStatus())
}

// CompareOwnerReferences is [compare.IncludeOwnerReferences] as an Option
// of this package; a Writer turns it on by itself when given an [Owner].
//
// Deprecated: with compare.Diff, pass [compare.IncludeOwnerReferences];
// with a Writer, pass CompareOptions(compare.IncludeOwnerReferences()), or
// nothing when the call has an Owner.
func CompareOwnerReferences() Option {
	return CompareOptions(compare.IncludeOwnerReferences())
}

// Own is [compare.Own] as an Option of this package.
//
// Deprecated: use CompareOptions(compare.Own(paths...)).
func Own(paths ...string) Option {
	return CompareOptions(compare.Own(paths...))
}

// ListKey is [compare.ListKey] as an Option of this package.
//
// Deprecated: use CompareOptions(compare.ListKey(path, key)).
func ListKey(path, key string) Option {
	return CompareOptions(compare.ListKey(path, key))
}

// CmpOptions is [compare.CmpOptions] as an Option of this package.
//
// Deprecated: use CompareOptions(compare.CmpOptions(opts...)).
func CmpOptions(opts ...cmp.Option) Option {
	return CompareOptions(compare.CmpOptions(opts...))
}

// Ensure is [Writer.Ensure] of a Writer built with c and the field owner
// [WithFieldOwner] names in opts: without it, it returns an error wrapping
// [errors.ErrNoFieldOwner] and sends nothing. [DetectHotLoops] sets its
// hot-loop detector.
//
// Deprecated: use NewWriter(c, fieldOwner).Ensure(ctx, desired, opts...).
func Ensure(ctx context.Context, c client.Client, desired client.Object, opts ...Option) (Outcome, error) {
	return writerFor(c, opts).ensure(ctx, desired, opts)
}

// EnsureMutate is [Writer.EnsureMutate] of a Writer built with c and the
// field owner [WithFieldOwner] names in opts.
//
// Deprecated: use NewWriter(c, fieldOwner).EnsureMutate(ctx, obj, mutate, opts...).
func EnsureMutate(ctx context.Context, c client.Client, obj client.Object, mutate func() error, opts ...Option) (Outcome, error) {
	return writerFor(c, opts).ensureMutate(ctx, obj, mutate, opts)
}

// EnsureApplied is [Writer.EnsureApplied] of a Writer built with c and the
// field owner [WithFieldOwner] names in opts.
//
// Deprecated: use NewWriter(c, fieldOwner).EnsureApplied(ctx, desired, opts...).
func EnsureApplied(ctx context.Context, c client.Client, desired client.Object, opts ...Option) (Outcome, error) {
	return writerFor(c, opts).ensureApplied(ctx, desired, opts)
}

// writerFor is the Writer of a deprecated package-level call.
func writerFor(c client.Client, opts []Option) *Writer {
	return NewWriter(c, newConfig(opts).fieldOwner)
}
