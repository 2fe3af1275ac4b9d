package ranges

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Max is the most ranges [Split] makes. A sharded controller holds
// each range through a Lease renewed every few seconds, so more ranges than
// this cost Lease writes without spreading the work any better.
const Max = 1024

// uidKey is the field the API server hashes: the object's UID, in the
// object-rooted syntax ShardSelector uses.
const uidKey = "object.metadata.uid"

// Range is a contiguous range of the 64-bit FNV-1a hash space of object
// UIDs, the space the API server's ShardSelector divides. It holds the
// hashes from Start to Last, both included: the exclusive end of the last
// range, 2^64, does not fit a uint64, and the selector writes it as
// '0x10000000000000000'.
//
// A Range is a client.ListOption: c.List(ctx, &list, r) asks the API server
// for the range's objects only (see [Range.ApplyToList]).
type Range struct {
	// Start is the first hash in the range.
	Start uint64
	// Last is the last hash in the range, included.
	Last uint64
}

// Split divides the hash space into n contiguous ranges of equal size (to
// within one hash), in order, from 0 to 2^64-1. Range i starts at
// ceil(i·2^64/n), so an object is in range [Of](obj, n). n must be between
// 1 and [Max].
func Split(n int) ([]Range, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	rs := make([]Range, n)
	for i := range rs {
		rs[i].Start = start(i, n)
		if i > 0 {
			rs[i-1].Last = rs[i].Start - 1
		}
	}
	rs[n-1].Last = math.MaxUint64
	return rs, nil
}

// start returns ceil(i·2^64/n), the first hash of range i of n (i < n).
func start(i, n int) uint64 {
	q, r := bits.Div64(uint64(i), 0, uint64(n))
	if r != 0 {
		q++
	}
	return q
}

func checkN(n int) error {
	if n < 1 || n > Max {
		return fmt.Errorf("shard: %d ranges: want between 1 and %d", n, Max)
	}
	return nil
}

// Of returns the index of the range of [Split](n) that holds obj, by the
// hash of its UID. n must be between 1 and [Max].
func Of(obj client.Object, n int) (int, error) {
	if err := checkN(n); err != nil {
		return 0, err
	}
	hi, _ := bits.Mul64(Hash(obj), uint64(n))
	return int(hi), nil
}

// Hash returns the 64-bit FNV-1a hash of obj's UID: the value the API
// server compares with a ShardSelector's bounds (apimachinery's
// sharding.HashField, as a number). An object that was never created has
// no UID yet, and hashes as the empty string.
//
// UIDs are random, so objects spread evenly over the ranges. FNV-1a's high
// bits barely move for strings that differ only in their last characters:
// the 400 strings "uid-0" to "uid-399" all hash into the same quarter.
// Whatever is hashed next (a namespace, an owner's key) should be as
// random as a UID, or be one.
func Hash(obj client.Object) uint64 {
	return fnv1a(string(obj.GetUID()))
}

// fnv1a is FNV-1a 64 (hash/fnv.New64a) without the allocation of a
// hash.Hash64: it runs for every event the fallback filter sees.
func fnv1a(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// Contains reports whether obj's UID hashes into r.
func (r Range) Contains(obj client.Object) bool {
	return r.has(Hash(obj))
}

func (r Range) has(h uint64) bool {
	return r.Start <= h && h <= r.Last
}

// Selector returns the range as a ShardSelector expression, as
// apimachinery's sharding package writes it:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// Bounds have 16 hex digits (the API server refuses fewer); the end is
// exclusive, and '0x10000000000000000' (2^64) for the last range.
func (r Range) Selector() string {
	return sharding.NewSelector(r.requirement()).String()
}

func (r Range) requirement() sharding.ShardRangeRequirement {
	return sharding.ShardRangeRequirement{Key: uidKey, Start: hex(r.Start), End: end(r.Last)}
}

// hex writes h as the API server wants a bound: 0x and 16 lowercase digits.
func hex(h uint64) string {
	return fmt.Sprintf("0x%016x", h)
}

// end writes the exclusive end of a range whose last hash is last.
func end(last uint64) string {
	if last == math.MaxUint64 {
		return "0x10000000000000000"
	}
	return hex(last + 1)
}

// String returns the range as a half-open interval of hashes,
// "[0x0000000000000000, 0x8000000000000000)".
func (r Range) String() string {
	return "[" + hex(r.Start) + ", " + end(r.Last) + ")"
}

// ApplyToList sets the list's ShardSelector to the range's [Range.Selector],
// so that a list (or watch) sent to the API server returns only the range's
// objects where the server honours it (see [Detect]). A cache-backed client
// ignores it: its informers hold what they were built to hold (see
// [CacheOptions]).
func (r Range) ApplyToList(opts *client.ListOptions) {
	setSelector(opts, r.Selector())
}

func setSelector(opts *client.ListOptions, sel string) {
	if opts.Raw == nil {
		opts.Raw = &metav1.ListOptions{}
	}
	opts.Raw.ShardSelector = sel
}

// Set is a set of ranges: those one replica holds, for instance.
// Set is a client.ListOption, like [Range].
type Set []Range

// Contains reports whether obj's UID hashes into one of rs.
func (rs Set) Contains(obj client.Object) bool {
	h := Hash(obj)
	for _, r := range rs {
		if r.has(h) {
			return true
		}
	}
	return false
}

// Selector returns a ShardSelector expression for the union of rs:
// ranges that touch or overlap are merged, and the rest joined with "||",
// in order of their start. An empty Set has no expression and Selector
// returns "": beware that a list with no ShardSelector returns every
// object.
func (rs Set) Selector() string {
	merged := rs.merge()
	if len(merged) == 0 {
		return ""
	}
	reqs := make([]sharding.ShardRangeRequirement, len(merged))
	for i, r := range merged {
		reqs[i] = r.requirement()
	}
	return sharding.NewSelector(reqs...).String()
}

// merge returns rs sorted by start, with ranges that touch or overlap
// joined into one.
func (rs Set) merge() Set {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b Range) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	var out Set
	for _, r := range sorted {
		if r.Start > r.Last {
			out = append(out, r) // not a range: kept as given, for the server to refuse
			continue
		}
		if n := len(out); n > 0 && out[n-1].Start <= out[n-1].Last &&
			(out[n-1].Last == math.MaxUint64 || r.Start <= out[n-1].Last+1) {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// String returns the merged ranges of rs as intervals, separated by
// commas: "[0x0000000000000000, 0x4000000000000000), [0x8000000000000000, 0xc000000000000000)".
func (rs Set) String() string {
	s := ""
	for i, r := range rs.merge() {
		if i > 0 {
			s += ", "
		}
		s += r.String()
	}
	return s
}

// ApplyToList sets the list's ShardSelector to rs's [Set.Selector]. An
// empty Set sets none, and the list returns every object.
func (rs Set) ApplyToList(opts *client.ListOptions) {
	setSelector(opts, rs.Selector())
}

var (
	_ client.ListOption = Range{}
	_ client.ListOption = Set{}
)
