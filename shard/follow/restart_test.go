package follow_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/envstart"
	"github.com/reconcilekit/reconcilekit/internal/restart"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
)

// TestFollowingCachesSurviveAPIServerRestarts runs three replicas whose
// caches follow their Members' ranges (Widgets by UID, their ConfigMaps by
// range label) while Widgets are created and every ConfigMap is changed
// again and again, and restarts kube-apiserver three times under them:
// the watches end, resume from a resourceVersion the new watch cache no
// longer has ("too old resource version") and the informers list again.
// Once the writes stop, each cache holds exactly what a plain informer of
// its ranges would: every Widget of its ranges and every ConfigMap of them
// at its last version, nothing of another range. With the sharding gate on
// and off, streamed lists and lists then watches, and with outages shorter
// than the Leases' renew deadline (the replicas keep their ranges) and
// longer (they lose them while the server is down and take them again).
func TestFollowingCachesSurviveAPIServerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts kube-apiserver three times")
	}
	assets, err := testenv.FindAssets()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		name      string
		gated     bool
		watchList bool
		outage    time.Duration
		lease     [3]time.Duration
	}{
		{"gated, streamed lists, ranges kept", true, true, 2 * time.Second, [3]time.Duration{15 * time.Second, 10 * time.Second, 500 * time.Millisecond}},
		{"gated, lists then watches, ranges lost", true, false, 4 * time.Second, [3]time.Duration{3 * time.Second, 2 * time.Second, 250 * time.Millisecond}},
		{"ungated, streamed lists, ranges lost", false, true, 4 * time.Second, [3]time.Duration{3 * time.Second, 2 * time.Second, 250 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has a control plane of its own to restart.
			t.Parallel()
			testRestarts(t, assets, tc.gated, tc.watchList, tc.outage, tc.lease)
		})
	}
}

func testRestarts(t *testing.T, assets string, gated, watchList bool, outage time.Duration, lease [3]time.Duration) {
	te, cfg, err := envstart.Start(func(int) *envtest.Environment { return shardtest.ControlPlane(assets, gated) })
	if err != nil {
		t.Fatal(err)
	}
	api, err := restart.Find(cfg, "--cert-dir="+te.ControlPlane.APIServer.CertDir)
	if err != nil {
		_ = te.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.Close(); err != nil {
			t.Error(err)
		}
		if err := te.Stop(); err != nil {
			t.Error(err)
		}
	})
	e, err := testenv.Attach(te, shardtest.Options)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	c := e.Client(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	labeler := shard.NewMember(cs.CoordinationV1(), shardtest.FieldOwner)
	labeler.RangeCount = testRanges

	type replica struct {
		m      *shard.Member
		c      cache.Cache
		cancel context.CancelFunc
		done   chan struct{}
	}
	var replicas []*replica
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		m := shard.NewMember(cs.CoordinationV1(), shardtest.FieldOwner)
		m.Namespace, m.Name, m.Identity, m.RangeCount = ns, "widgets", name, testRanges
		m.LeaseDuration, m.RenewDeadline, m.RetryPeriod, m.DrainTimeout = lease[0], lease[1], lease[2], time.Second
		opts, err := follow.CacheOptions(cache.Options{Scheme: e.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}}, m,
			follow.Kinds{Objects: []client.Object{&testapi.Widget{}}, Children: []client.Object{&corev1.ConfigMap{}}})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := cache.New(cfg, serverSide(opts, honours, watchList))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{m: m, c: cc, cancel: cancel, done: make(chan struct{})}
		var wg sync.WaitGroup
		wg.Go(func() { _ = m.Start(ctx) })
		wg.Go(func() { _ = cc.Start(ctx) })
		go func() { wg.Wait(); close(r.done) }()
		t.Cleanup(func() { cancel(); <-r.done })
		for _, obj := range []client.Object{&testapi.Widget{}, &corev1.ConfigMap{}} {
			if _, err := cc.GetInformer(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		replicas = append(replicas, r)
	}

	// The writers: a new Widget (with its labelled ConfigMap) every 40ms,
	// and a change to a random ConfigMap every 10ms, through the restarts
	// (a write the server is not there for is simply lost).
	ctx, stop := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		made    []string
		writes  atomic.Int64
		writers sync.WaitGroup
	)
	writers.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			time.Sleep(40 * time.Millisecond)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%04d", i)}}
			if err := c.Create(ctx, w); err != nil {
				continue
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.Name}, Data: map[string]string{"n": "0"}}
			if err := follow.Label(labeler, w, cm); err != nil {
				t.Error(err)
				return
			}
			// A ConfigMap that could not be created stays missing: a
			// Widget without one is as fine a test as any.
			if err := c.Create(ctx, cm); err == nil {
				mu.Lock()
				made = append(made, cm.Name)
				mu.Unlock()
			}
		}
	})
	writers.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			if len(made) == 0 {
				mu.Unlock()
				continue
			}
			name := made[rand.IntN(len(made))]
			mu.Unlock()
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
				continue
			}
			n, _ := strconv.Atoi(cm.Data["n"])
			cm.Data["n"] = strconv.Itoa(n + 1)
			if c.Update(ctx, &cm) == nil {
				writes.Add(1)
			}
		}
	})

	out := io.Discard
	for i := range 3 {
		time.Sleep(3 * time.Second)
		t.Logf("restart %d: kube-apiserver down for %s", i+1, outage)
		if err := api.Restart(outage, out); err != nil {
			stop()
			writers.Wait()
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	stop()
	writers.Wait()

	// What a plain informer of each replica's ranges would hold: the
	// server's objects, by name, with their last version.
	var widgets testapi.WidgetList
	var cms corev1.ConfigMapList
	if err := c.List(context.Background(), &widgets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(context.Background(), &cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	owners := map[string]client.Object{}
	for i := range widgets.Items {
		owners[widgets.Items[i].Name] = &widgets.Items[i]
	}
	t.Logf("%d Widgets, %d ConfigMaps, %d ConfigMap changes", len(widgets.Items), len(cms.Items), writes.Load())

	deadline := time.Now().Add(2 * time.Minute)
	for {
		var diffs []string
		for i, r := range replicas {
			held := r.m.Held()
			wantW, wantC := map[string]string{}, map[string]string{}
			for _, w := range widgets.Items {
				if held.Contains(&w) {
					wantW[w.Name] = w.ResourceVersion
				}
			}
			for _, cm := range cms.Items {
				if o := owners[cm.Name]; o != nil && held.Contains(o) {
					wantC[cm.Name] = cm.Data["n"]
				}
			}
			var gotWs testapi.WidgetList
			var gotCs corev1.ConfigMapList
			if err := r.c.List(context.Background(), &gotWs); err != nil {
				t.Fatal(err)
			}
			if err := r.c.List(context.Background(), &gotCs); err != nil {
				t.Fatal(err)
			}
			gotW, gotC := map[string]string{}, map[string]string{}
			for _, w := range gotWs.Items {
				gotW[w.Name] = w.ResourceVersion
			}
			for _, cm := range gotCs.Items {
				gotC[cm.Name] = cm.Data["n"]
			}
			if d := cmp.Diff(wantW, gotW); d != "" {
				diffs = append(diffs, fmt.Sprintf("r%d (ranges %s) Widgets (-server +cache):\n%s", i, held, d))
			}
			if d := cmp.Diff(wantC, gotC); d != "" {
				diffs = append(diffs, fmt.Sprintf("r%d (ranges %s) ConfigMaps' n (-server +cache):\n%s", i, held, d))
			}
		}
		if len(diffs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			sort.Strings(diffs)
			t.Fatalf("after %d restarts, the caches still differ from the server, 2 minutes after the last write:\n%s", 3, strings.Join(diffs, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var counts []string
	for i, r := range replicas {
		counts = append(counts, fmt.Sprintf("r%d %s", i, r.m.Held()))
	}
	t.Logf("every cache holds its ranges' objects at their last version: %v", counts)
}
