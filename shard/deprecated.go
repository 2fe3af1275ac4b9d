package shard

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// The names below moved when shard was split into one concept per package
// (issue 34): the hash space and its ranges to package ranges, the cache
// that follows a Member's ranges to package follow. They keep working for
// one minor version.

// MaxRanges is the most ranges Split makes.
//
// Deprecated: use ranges.Max.
const MaxRanges = ranges.Max

// Range is a contiguous range of the hash space of object UIDs.
//
// Deprecated: use ranges.Range.
type Range = ranges.Range

// Ranges is a set of ranges.
//
// Deprecated: use ranges.Set.
type Ranges = ranges.Set

// Selection is a part of the hash space that an object is in or not.
//
// Deprecated: use ranges.Selection.
type Selection = ranges.Selection

// Support is what an API server does with a ShardSelector.
//
// Deprecated: use ranges.Support.
type Support = ranges.Support

// The supports Detect finds.
//
// Deprecated: use ranges.Honoured, ranges.Ignored and ranges.Refused.
const (
	Honoured = ranges.Honoured
	Ignored  = ranges.Ignored
	Refused  = ranges.Refused
)

// Detection is what Detect found.
//
// Deprecated: use ranges.Detection.
type Detection = ranges.Detection

// Split divides the hash space into n ranges.
//
// Deprecated: use ranges.Split.
func Split(n int) ([]Range, error) { return ranges.Split(n) }

// Of returns the index of obj's range among n.
//
// Deprecated: use ranges.Of.
func Of(obj client.Object, n int) (int, error) { return ranges.Of(obj, n) }

// Hash is the hash of obj's UID.
//
// Deprecated: use ranges.Hash.
func Hash(obj client.Object) uint64 { return ranges.Hash(obj) }

// Predicate lets through the events of objects in s.
//
// Deprecated: use ranges.Predicate.
func Predicate(s Selection) predicate.Predicate { return ranges.Predicate(s) }

// Detect asks the server what it does with a ShardSelector.
//
// Deprecated: use ranges.Detect.
func Detect(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) (Detection, error) {
	return ranges.Detect(ctx, c, list, opts...)
}

// WrapCacheOptions makes the informers of objs' kinds list and watch rs.
//
// Deprecated: use ranges.CacheOptions.
func WrapCacheOptions(opts cache.Options, rs Ranges, objs ...client.Object) (cache.Options, error) {
	return ranges.CacheOptions(opts, rs, objs...)
}

// WrapListerWatcher sends rs's selector with every list and watch of lw.
//
// Deprecated: use ranges.ListerWatcher.
func WrapListerWatcher(lw toolscache.ListerWatcher, rs Ranges) toolscache.ListerWatcher {
	return ranges.ListerWatcher(lw, rs)
}

// RangeLabel labels a child with its owner's range.
//
// Deprecated: use follow.RangeLabel.
const RangeLabel = follow.RangeLabel

// Follow names the kinds whose informers follow the ranges a Member holds.
//
// Deprecated: use follow.Kinds.
type Follow = follow.Kinds

// WrapCacheOptions returns opts with the informers of f's kinds following
// the ranges m holds.
//
// Deprecated: use follow.CacheOptions(opts, m, f).
func (m *Member) WrapCacheOptions(opts cache.Options, f Follow) (cache.Options, error) {
	return follow.CacheOptions(opts, m, f)
}

// Label sets RangeLabel on child to owner's range among m's RangeCount ranges.
//
// Deprecated: use follow.Label(m, owner, child).
func (m *Member) Label(owner, child client.Object) error { return follow.Label(m, owner, child) }
