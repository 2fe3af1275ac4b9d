package follow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// v040RangeLabel is the key v0.4.0 labelled children with, spelled out:
// v0.4.0 wrote it alone, v0.5.x beside follow.RangeLabel.
const v040RangeLabel = "shard.reconcilekit.dev/range"

// TestAFollowerCachesAChildLabelledByV05 upgrades live children, as v1.0.0
// promises: Widgets whose ConfigMaps carry their range under both keys (as
// v0.5.x's Label wrote it), Widgets whose ConfigMaps this version's
// follow.Label labelled (follow.RangeLabel alone), and Widgets whose
// ConfigMaps carry it under v0.4.0's key alone (never labelled again since
// v0.4.0). Two replicas of this version, their caches following their
// Members' ranges, each cache exactly the ConfigMaps of the Widgets of
// their ranges of the first two kinds: no child labelled by v0.5.x is lost
// to its owner's replica; and no replica caches one of the third kind,
// which v1.0.0 needs labelled again (docs/sharding.md).
func TestAFollowerCachesAChildLabelledByV05(t *testing.T) {
	e := env.Require(t)
	c := e.Client(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	labeler := shard.NewMember(cs.CoordinationV1(), shardtest.FieldOwner)
	labeler.RangeCount = testRanges

	all := shardtest.Create(t, c, ns, "w", 60, shardtest.NewWidget)
	var widgets []client.Object // those whose ConfigMaps a replica caches
	for i, w := range all {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName(), Namespace: ns}}
		r, err := ranges.Of(w, testRanges)
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("%d-of-%d", r, testRanges)
		switch i % 3 {
		case 0: // as v0.5.x labelled it
			cm.Labels = map[string]string{follow.RangeLabel: v, v040RangeLabel: v}
			widgets = append(widgets, w)
		case 1: // as this version labels it
			if err := follow.Label(labeler, w, cm); err != nil {
				t.Fatal(err)
			}
			widgets = append(widgets, w)
		case 2: // as v0.4.0 labelled it, and nothing since
			cm.Labels = map[string]string{v040RangeLabel: v}
		}
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}

	var replicas []*followed
	for _, name := range []string{"a", "b"} {
		m, stop := shardtest.StartMember(t, cs.CoordinationV1(), ns, "widgets", name, testRanges, shardtest.Short)
		opts, err := follow.CacheOptions(cache.Options{Scheme: e.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}}, m,
			follow.Kinds{Objects: []client.Object{&testapi.Widget{}}, Children: []client.Object{&corev1.ConfigMap{}}})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := cache.New(e.Config, opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = cc.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-stopped })
		for _, obj := range []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}} {
			if _, err := cc.GetInformer(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		if !cc.WaitForCacheSync(ctx) {
			t.Fatal("the cache did not sync")
		}
		replicas = append(replicas, &followed{m, stop, cc})
	}
	shardtest.WaitBalanced(t, settleLimit, replicas[0].m, replicas[1].m)

	var diffs []string
	for deadline := time.Now().Add(settleLimit); ; time.Sleep(50 * time.Millisecond) {
		diffs = nil
		for _, f := range replicas {
			held := f.m.Held()
			var cms corev1.ConfigMapList
			if err := f.c.List(t.Context(), &cms); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(shardtest.NamesIn(widgets, held), shardtest.Names(t, &cms)); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s's ConfigMaps (-of its Widgets, in its ranges %s +cached):\n%s", f.m.Identity, held, d))
			}
		}
		if len(diffs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caches do not hold the children of their ranges labelled by v0.5.x or since, and only those:\n%s", diffs)
		}
	}
}
