package shard_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// TestTheNamesThatMovedStillWork: code written for shard before its split
// compiles and does what it did, for one minor version: the moved names
// are the new ones, and a Member built as a literal (no field owner) still
// validates, its Lease writes carrying no field manager as before.
func TestTheNamesThatMovedStillWork(t *testing.T) {
	rs, err := shard.Split(4)
	want, _ := ranges.Split(4)
	if err != nil || len(rs) != len(want) || rs[3] != want[3] {
		t.Fatalf("shard.Split(4) = %v, %v; want %v", rs, err, want)
	}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "6f1b1d2e-0c8a-4b9e-9a53-2d6a2b8f4c11"}}
	if i, _ := shard.Of(obj, 4); i != 3 || shard.Hash(obj) != ranges.Hash(obj) {
		t.Errorf("shard.Of = %d, shard.Hash = %#x; want 3, %#x", i, shard.Hash(obj), ranges.Hash(obj))
	}
	var held shard.Ranges = ranges.Set{rs[3]}
	if !held.Contains(obj) || shard.RangeLabel != follow.RangeLabel || shard.MaxRanges != ranges.Max {
		t.Error("the moved types and constants are not the new ones")
	}

	m := &shard.Member{Leases: fake.NewClientset().CoordinationV1(), Namespace: "n", Name: "w", Ranges: 4}
	if err := m.Validate(); err != nil {
		t.Errorf("a Member literal, as before NewMember: %v", err)
	}
	pod := &corev1.Pod{}
	if err := m.Label(obj, pod); err != nil || pod.Labels[follow.RangeLabel] != "3-of-4" {
		t.Errorf("Member.Label: %v, labels %v", err, pod.Labels)
	}
	opts, err := m.WrapCacheOptions(cache.Options{}, shard.Follow{Objects: []client.Object{&corev1.ConfigMap{}}})
	if err != nil || opts.NewInformer == nil {
		t.Errorf("Member.WrapCacheOptions: %v", err)
	}
	if _, err := shard.WrapCacheOptions(cache.Options{}, held, &corev1.ConfigMap{}); err != nil {
		t.Errorf("shard.WrapCacheOptions: %v", err)
	}
}
