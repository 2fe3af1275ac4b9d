package shard_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/shard"
)

// Split the hash space in two; each half's selector is what a replica's
// lists and watches send.
func Example() {
	rs, err := shard.Split(2)
	if err != nil {
		panic(err)
	}
	for i, r := range rs {
		fmt.Println(i, r, r.Selector())
	}

	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", UID: "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"}}
	i, _ := shard.Of(obj, len(rs))
	fmt.Printf("%s: hash %#016x, range %d, in it: %v\n", obj.Name, shard.Hash(obj), i, rs[i].Contains(obj))

	_, err = shard.Split(0)
	fmt.Println(err)
	// Output:
	// 0 [0x0000000000000000, 0x8000000000000000) shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
	// 1 [0x8000000000000000, 0x10000000000000000) shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')
	// settings: hash 0xd117769195d03a64, range 1, in it: true
	// shard: 0 ranges: want between 1 and 1024
}

// A replica that holds two ranges of four that do not touch sends both,
// joined with ||; ranges that touch are merged into one.
func ExampleRanges_Selector() {
	rs, _ := shard.Split(4)
	fmt.Println(shard.Ranges{rs[2], rs[0]}.Selector())
	fmt.Println(shard.Ranges{rs[1], rs[2]}.Selector())
	// Output:
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')
	// shardRange(object.metadata.uid, '0x4000000000000000', '0xc000000000000000')
}

// On a server without the gate, the cache holds every object: the
// predicate keeps a replica's controller to its ranges.
func ExamplePredicate() {
	rs, _ := shard.Split(2)
	p := shard.Predicate(rs[1])
	for _, uid := range []string{"a1b2c3d4-e5f6-4789-8abc-def012345678", "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		fmt.Printf("%s: %v\n", uid, p.Create(event.CreateEvent{Object: obj}))
	}
	// Output:
	// a1b2c3d4-e5f6-4789-8abc-def012345678: false
	// 6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11: true
}

// A list through a client that reads from the API server (a manager's
// GetAPIReader) takes a Range or Ranges as a ListOption.
func ExampleRange_ApplyToList() {
	rs, _ := shard.Split(4)
	var opts client.ListOptions
	opts.ApplyOptions([]client.ListOption{client.InNamespace("default"), rs[3]})
	fmt.Println(opts.AsListOptions().ShardSelector)
	// Output:
	// shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
}

// The cache of a manager lists and watches ConfigMaps of its range only;
// other kinds are cached whole.
func ExampleWrapCacheOptions() {
	rs, _ := shard.Split(3)
	opts, err := shard.WrapCacheOptions(cache.Options{}, shard.Ranges{rs[1]}, &corev1.ConfigMap{})
	if err != nil {
		panic(err)
	}
	// mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
	fmt.Println(opts.NewInformer != nil)

	_, err = shard.WrapCacheOptions(cache.Options{}, nil, &corev1.ConfigMap{})
	fmt.Println(err)
	// Output:
	// true
	// shard: no ranges to cache: an informer without a ShardSelector would list every object
}

// A sharded controller labels each Pod it creates with its owner's range,
// so that the replica holding that range caches the Pod.
func ExampleMember_Label() {
	m := &shard.Member{Ranges: 4}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner-run"}}
	if err := m.Label(owner, pod); err != nil {
		panic(err)
	}
	fmt.Println(pod.Labels[shard.RangeLabel])
	// Output:
	// 3-of-4
}

// A replica's cache that holds the Widgets of the ranges its Member holds,
// and their Pods; the manager gets it through ctrl.Options{Cache: opts}.
func ExampleMember_WrapCacheOptions() {
	m := &shard.Member{Namespace: "widgets-system", Name: "widgets", Ranges: 8} // and Leases
	opts, err := m.WrapCacheOptions(cache.Options{}, shard.Follow{
		Objects:  []client.Object{&corev1.ConfigMap{}}, // the controller's own kind (its For)
		Children: []client.Object{&corev1.Pod{}},       // what it creates, labelled with m.Label
	})
	fmt.Println(err, opts.NewInformer != nil, len(opts.ByObject))
	// Output:
	// <nil> true 1
}
