package ranges_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// Split the hash space in two; each half's selector is what a replica's
// lists and watches send.
func Example() {
	rs, err := ranges.Split(2)
	if err != nil {
		panic(err)
	}
	for i, r := range rs {
		fmt.Println(i, r, r.Selector())
	}

	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", UID: "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"}}
	i, _ := ranges.Of(obj, len(rs))
	fmt.Printf("%s: hash %#016x, range %d, in it: %v\n", obj.Name, ranges.Hash(obj), i, rs[i].Contains(obj))

	_, err = ranges.Split(0)
	fmt.Println(err)
	// Output:
	// 0 [0x0000000000000000, 0x8000000000000000) shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
	// 1 [0x8000000000000000, 0x10000000000000000) shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')
	// settings: hash 0xd117769195d03a64, range 1, in it: true
	// shard: 0 ranges: want between 1 and 1024
}

// A replica that holds two ranges of four that do not touch sends both,
// joined with ||; ranges that touch are merged into one.
func ExampleSet_Selector() {
	rs, _ := ranges.Split(4)
	fmt.Println(ranges.Set{rs[2], rs[0]}.Selector())
	fmt.Println(ranges.Set{rs[1], rs[2]}.Selector())
	// Output:
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')
	// shardRange(object.metadata.uid, '0x4000000000000000', '0xc000000000000000')
}

// On a server without the gate, the cache holds every object: the
// predicate keeps a replica's controller to its ranges.
func ExamplePredicate() {
	rs, _ := ranges.Split(2)
	p := ranges.Predicate(rs[1])
	for _, uid := range []string{"a1b2c3d4-e5f6-4789-8abc-def012345678", "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		fmt.Printf("%s: %v\n", uid, p.Create(event.CreateEvent{Object: obj}))
	}
	// Output:
	// a1b2c3d4-e5f6-4789-8abc-def012345678: false
	// 6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11: true
}

// A list through a client that reads from the API server (a manager's
// GetAPIReader) takes a Range or Set as a ListOption.
func ExampleRange_ApplyToList() {
	rs, _ := ranges.Split(4)
	var opts client.ListOptions
	opts.ApplyOptions([]client.ListOption{client.InNamespace("default"), rs[3]})
	fmt.Println(opts.AsListOptions().ShardSelector)
	// Output:
	// shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
}

// The cache of a manager lists and watches ConfigMaps of its range only;
// other kinds are cached whole.
func ExampleCacheOptions() {
	rs, _ := ranges.Split(3)
	opts, err := ranges.CacheOptions(cache.Options{}, ranges.Set{rs[1]}, &corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	// mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
	fmt.Println(opts.NewInformer != nil)

	_, err = ranges.CacheOptions(cache.Options{}, nil, &corev1.ConfigMap{})
	fmt.Println(err)
	// Output:
	// true
	// shard: no ranges to cache: an informer without a ShardSelector would list every object
}
