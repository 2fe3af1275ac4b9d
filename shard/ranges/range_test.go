package ranges_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// withUID returns a ConfigMap whose UID is uid: all the package reads.
func withUID(uid string) client.Object {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: types.UID(uid)}}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want []ranges.Range
	}{
		{name: "one range is the whole space", n: 1, want: []ranges.Range{{Start: 0, Last: math.MaxUint64}}},
		{name: "halves", n: 2, want: []ranges.Range{
			{Start: 0, Last: 1<<63 - 1},
			{Start: 1 << 63, Last: math.MaxUint64},
		}},
		// 2^64/3 = 0x5555555555555555.55…: a range starts at the ceiling.
		{name: "thirds", n: 3, want: []ranges.Range{
			{Start: 0, Last: 0x5555555555555555},
			{Start: 0x5555555555555556, Last: 0xaaaaaaaaaaaaaaaa},
			{Start: 0xaaaaaaaaaaaaaaab, Last: math.MaxUint64},
		}},
		{name: "quarters", n: 4, want: []ranges.Range{
			{Start: 0, Last: 0x3fffffffffffffff},
			{Start: 0x4000000000000000, Last: 0x7fffffffffffffff},
			{Start: 0x8000000000000000, Last: 0xbfffffffffffffff},
			{Start: 0xc000000000000000, Last: math.MaxUint64},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ranges.Split(tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split(%d) (-want +got):\n%s", tt.n, diff)
			}
		})
	}
}

func TestSplitRefusesBadCounts(t *testing.T) {
	for _, n := range []int{0, -1, math.MinInt, ranges.Max + 1, math.MaxInt} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			rs, err := ranges.Split(n)
			if err == nil || rs != nil {
				t.Fatalf("Split(%d) = %v, %v; want an error", n, rs, err)
			}
			if want := fmt.Sprintf("%d ranges: want between 1 and %d", n, ranges.Max); !strings.Contains(err.Error(), want) {
				t.Errorf("Split(%d) error %q; want it to say %q", n, err, want)
			}
			if _, err := ranges.Of(withUID("u"), n); err == nil {
				t.Errorf("Of(obj, %d) gave no error", n)
			}
		})
	}
}

// TestSplitAllCounts checks every count Split accepts: the ranges are
// contiguous, cover the space, and their sizes differ by at most one.
func TestSplitAllCounts(t *testing.T) {
	for n := 1; n <= ranges.Max; n++ {
		rs, err := ranges.Split(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != n || rs[0].Start != 0 || rs[n-1].Last != math.MaxUint64 {
			t.Fatalf("Split(%d): %d ranges from %s to %s", n, len(rs), rs[0], rs[n-1])
		}
		lo, hi := uint64(math.MaxUint64), uint64(0)
		for i, r := range rs {
			if i > 0 && r.Start != rs[i-1].Last+1 {
				t.Fatalf("Split(%d): range %d starts at %#x, after %#x", n, i, r.Start, rs[i-1].Last)
			}
			size := r.Last - r.Start // one less than the size: 2^64 fits no uint64
			lo, hi = min(lo, size), max(hi, size)
		}
		if hi-lo > 1 {
			t.Fatalf("Split(%d): sizes differ by %d", n, hi-lo)
		}
	}
}

// TestSelector checks the expressions against those the API's own
// documentation gives (metav1.ListOptions.ShardSelector).
func TestSelector(t *testing.T) {
	two, _ := ranges.Split(2)
	four, _ := ranges.Split(4)
	tests := []struct {
		name       string
		sel        interface{ Selector() string }
		want       string
		wantString string
	}{
		{
			name:       "first half",
			sel:        two[0],
			want:       "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
			wantString: "[0x0000000000000000, 0x8000000000000000)",
		},
		{
			name:       "second half ends at 2^64",
			sel:        two[1],
			want:       "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
			wantString: "[0x8000000000000000, 0x10000000000000000)",
		},
		{
			name:       "a quarter",
			sel:        four[2],
			want:       "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
			wantString: "[0x8000000000000000, 0xc000000000000000)",
		},
		{
			name:       "the zero Range holds the hash 0",
			sel:        ranges.Range{},
			want:       "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')",
			wantString: "[0x0000000000000000, 0x0000000000000001)",
		},
		{
			name:       "ranges apart are joined with ||, in order",
			sel:        ranges.Set{four[3], four[1]},
			want:       "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
			wantString: "[0x4000000000000000, 0x8000000000000000), [0xc000000000000000, 0x10000000000000000)",
		},
		{
			name:       "ranges that touch are merged",
			sel:        ranges.Set{four[2], four[0], four[1]},
			want:       "shardRange(object.metadata.uid, '0x0000000000000000', '0xc000000000000000')",
			wantString: "[0x0000000000000000, 0xc000000000000000)",
		},
		{
			name:       "all of them are the whole space",
			sel:        ranges.Set(four),
			want:       "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
			wantString: "[0x0000000000000000, 0x10000000000000000)",
		},
		{
			name:       "overlaps and repeats are merged",
			sel:        ranges.Set{{Start: 10, Last: 20}, {Start: 15, Last: 30}, {Start: 10, Last: 20}, {Start: 40, Last: 50}},
			want:       "shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000001f') || shardRange(object.metadata.uid, '0x0000000000000028', '0x0000000000000033')",
			wantString: "[0x000000000000000a, 0x000000000000001f), [0x0000000000000028, 0x0000000000000033)",
		},
		{
			name: "no ranges, no selector",
			sel:  ranges.Set{},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel.Selector(); got != tt.want {
				t.Errorf("Selector()\n got %s\nwant %s", got, tt.want)
			}
			if got := fmt.Sprint(tt.sel); got != tt.wantString {
				t.Errorf("String()\n got %s\nwant %s", got, tt.wantString)
			}
		})
	}
}

func TestApplyToList(t *testing.T) {
	two, _ := ranges.Split(2)
	var opts client.ListOptions
	opts.ApplyOptions([]client.ListOption{client.InNamespace("ns"), client.Limit(5), two[1]})
	raw := opts.AsListOptions()
	if raw.ShardSelector != two[1].Selector() || raw.Limit != 5 || opts.Namespace != "ns" {
		t.Errorf("ListOptions = %+v, namespace %q; want the selector of %s, limit 5, namespace ns", raw, opts.Namespace, two[1])
	}
	opts = client.ListOptions{}
	opts.ApplyOptions([]client.ListOption{ranges.Set{two[0]}})
	if got := opts.AsListOptions().ShardSelector; got != two[0].Selector() {
		t.Errorf("Ranges set ShardSelector %q; want %q", got, two[0].Selector())
	}
}

func TestHash(t *testing.T) {
	tests := []struct {
		uid  string
		want uint64
	}{
		// FNV-1a 64's published vectors: the offset basis, "a".
		{uid: "", want: 0xcbf29ce484222325},
		{uid: "a", want: 0xaf63dc4c8601ec8c},
		{uid: "foobar", want: 0x85944171f73967e8},
	}
	for _, tt := range tests {
		if got := ranges.Hash(withUID(tt.uid)); got != tt.want {
			t.Errorf("Hash(uid %q) = %#x; want %#x", tt.uid, got, tt.want)
		}
	}
}

// FuzzRange holds the package to the API server's definitions: the hash is
// apimachinery's sharding.HashField (and hash/fnv's FNV-1a), each object is
// in exactly one range of a Split and that is the range Of names, and
// Contains agrees with apimachinery's sharding selector, the code the API
// server runs to filter a list or watch, built from the range's bounds.
func FuzzRange(f *testing.F) {
	f.Add("6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11", uint16(2), uint64(0))
	f.Add("", uint16(1), uint64(1))
	f.Add("a", uint16(3), uint64(5))
	f.Add("uid", uint16(ranges.Max), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, uid string, n16 uint16, subset uint64) {
		obj := withUID(uid)
		h := ranges.Hash(obj)

		std := fnv.New64a()
		std.Write([]byte(uid))
		if h != std.Sum64() {
			t.Fatalf("Hash(%q) = %#x; hash/fnv says %#x", uid, h, std.Sum64())
		}
		if want := fmt.Sprintf("%016x", h); sharding.HashField(uid) != want {
			t.Fatalf("Hash(%q) = %s; sharding.HashField says %s", uid, want, sharding.HashField(uid))
		}

		n := int(n16)%ranges.Max + 1
		rs, err := ranges.Split(n)
		if err != nil {
			t.Fatal(err)
		}
		of, err := ranges.Of(obj, n)
		if err != nil {
			t.Fatal(err)
		}
		in := 0
		for i, r := range rs {
			if !r.Contains(obj) {
				continue
			}
			in++
			if i != of {
				t.Errorf("uid %q hashes into range %d of %d; Of says %d", uid, i, n, of)
			}
		}
		if in != 1 {
			t.Fatalf("uid %q (hash %#x) is in %d ranges of %d", uid, h, in, n)
		}
		// The range that holds the object and its neighbours, against
		// the server's matcher.
		for _, i := range []int{of - 1, of, of + 1} {
			if i < 0 || i >= n {
				continue
			}
			if got, want := rs[i].Contains(obj), upstreamMatches(t, obj, rs[i]); got != want {
				t.Errorf("range %s: Contains(uid %q, hash %#x) = %v; apimachinery's selector says %v", rs[i], uid, h, got, want)
			}
		}
		// A subset of up to 64 ranges, chosen by the bits of subset, as a
		// replica holding them would list it.
		var held ranges.Set
		for i := 0; i < n && i < 64; i++ {
			if subset&(1<<i) != 0 {
				held = append(held, rs[i])
			}
		}
		if len(held) == 0 {
			return
		}
		if got, want := held.Contains(obj), upstreamMatches(t, obj, held...); got != want {
			t.Errorf("ranges %s: Contains(uid %q, hash %#x) = %v; apimachinery's selector says %v", held, uid, h, got, want)
		}
		sel := held.Selector()
		for _, part := range strings.Split(sel, " || ") {
			if !selectorPart.MatchString(part) {
				t.Fatalf("Selector() of %s has a part %q the API server would refuse", held, part)
			}
		}
	})
}

// selectorPart is one shardRange of a selector as the API server's parser
// accepts it (k8s.io/apiserver/pkg/sharding.Parse): the UID, and bounds of
// 0x and 16 lowercase hex digits, or 2^64 for an end.
var selectorPart = regexp.MustCompile(`^shardRange\(object\.metadata\.uid, '(0x[0-9a-f]{16})', '(0x[0-9a-f]{16}|0x10000000000000000)'\)$`)

// upstreamMatches reads the selector of rs back into apimachinery's shard
// range requirements, and asks apimachinery's selector (what the API
// server evaluates) whether obj matches.
func upstreamMatches(t *testing.T, obj client.Object, rs ...ranges.Range) bool {
	t.Helper()
	var reqs []sharding.ShardRangeRequirement
	for _, part := range strings.Split(ranges.Set(rs).Selector(), " || ") {
		m := selectorPart.FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("selector part %q is not one the API server accepts", part)
		}
		if !sharding.HexLess(m[1], m[2]) {
			t.Fatalf("selector part %q: start not below end, the API server refuses it", part)
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: m[1], End: m[2]})
	}
	ok, err := sharding.NewSelector(reqs...).Matches(obj)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
