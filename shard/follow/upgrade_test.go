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

// v040RangeLabel is the key v0.4.0 labelled children with, spelled out: it
// is what live clusters hold, whatever the constants of this version say.
const v040RangeLabel = "shard.reconcilekit.dev/range"

// TestAFollowerCachesAChildLabelledByV040 upgrades live children: Widgets
// whose ConfigMaps carry their range under v0.4.0's key only (as v0.4.0's
// Label wrote it), and Widgets whose ConfigMaps this version's follow.Label
// labelled (both keys). Two replicas of this version, their caches
// following their Members' ranges, each cache exactly the ConfigMaps of
// the Widgets of their ranges, of both kinds: no child written before the
// upgrade is lost to its owner's replica.
func TestAFollowerCachesAChildLabelledByV040(t *testing.T) {
	e := env.Require(t)
	c := e.Client(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	labeler := shard.NewMember(cs.CoordinationV1(), shardtest.FieldOwner)
	labeler.RangeCount = testRanges

	widgets := shardtest.Create(t, c, ns, "w", 40, shardtest.NewWidget)
	for i, w := range widgets {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName(), Namespace: ns}}
		if i%2 == 0 {
			// As v0.4.0 labelled it.
			r, err := ranges.Of(w, testRanges)
			if err != nil {
				t.Fatal(err)
			}
			cm.Labels = map[string]string{v040RangeLabel: fmt.Sprintf("%d-of-%d", r, testRanges)}
		} else if err := follow.Label(labeler, w, cm); err != nil {
			t.Fatal(err)
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
			t.Fatalf("the caches do not hold the children of their ranges, labelled by v0.4.0 or since:\n%s", diffs)
		}
	}
}
