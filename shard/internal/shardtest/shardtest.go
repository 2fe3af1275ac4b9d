// Package shardtest is the test plumbing of the shard packages: a control
// plane whose kube-apiserver runs with sharded list and watch on, and small
// helpers to make and name objects.
package shardtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/internal/envstart"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// Gate is the kube-apiserver flag value that turns sharded list and watch
// on.
const Gate = "ShardedListAndWatch=true"

// Options are the test CRDs and scheme of every control plane here.
var Options = testenv.Options{
	CRDDirectoryPaths: []string{filepath.Join(moduleRoot(), "internal", "testapi", "crd")},
	AddToScheme:       []func(*k8sruntime.Scheme) error{testapi.AddToScheme},
}

// moduleRoot is the nearest directory holding a go.mod, from the working
// directory up: the repository's root, for a test of a package in it (go
// test runs a test in its package's directory). Not the source file's
// directory: make test builds with -trimpath, which hides it.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Env is the package's control plane, started by Main; nil when none could
// be started (the tests that need it skip, with Reason, outside CI).
type Env struct {
	*testenv.Env
	Reason string
}

// Main starts a control plane with the gate on, runs the tests and stops
// it: a package's TestMain is os.Exit(shardtest.Main(m, &env)). Outside CI,
// without envtest binaries, the tests that need it skip.
func Main(m *testing.M, env *Env) int {
	flag.Parse()
	// Members log their ranges; the tests say what matters.
	log.SetLogger(logr.Discard())
	env.Reason = "no control plane was started"
	for _, f := range []string{"test.fuzz", "test.fuzzworker"} {
		if v := flag.Lookup(f); v != nil && v.Value.String() != "" && v.Value.String() != "false" {
			env.Reason = "no control plane for a fuzzing run"
			return m.Run()
		}
	}
	assets, err := testenv.FindAssets()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		env.Reason = err.Error()
		fmt.Fprintln(os.Stderr, "tests that need an API server will be skipped:", err)
		return m.Run()
	}
	te, _, err := envstart.Start(func(int) *envtest.Environment { return ControlPlane(assets, true) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting a control plane with --feature-gates=%s from %s: %v\n", Gate, assets, err)
		return 1
	}
	code := 0
	if env.Env, err = testenv.Attach(te, Options); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	} else {
		code = m.Run()
	}
	if err := te.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// ControlPlane returns an envtest environment with the test CRDs, as
// testenv would start it, with the gate on or off.
func ControlPlane(assets string, gated bool) *envtest.Environment {
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        Options.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if gated {
		te.ControlPlane.GetAPIServer().Configure().Set("feature-gates", Gate)
	}
	return te
}

// Require returns the control plane, or skips the test when none runs.
func (e *Env) Require(t *testing.T) *testenv.Env {
	t.Helper()
	if e.Env == nil {
		t.Skip(e.Reason)
	}
	return e.Env
}

// Create makes n objects of newObj's kind in ns, named prefix-000 on, and
// returns them as the server stored them (UIDs set).
func Create(t *testing.T, c client.Client, ns, prefix string, n int, newObj func() client.Object) []client.Object {
	t.Helper()
	out := make([]client.Object, n)
	for i := range out {
		obj := newObj()
		obj.SetNamespace(ns)
		obj.SetName(fmt.Sprintf("%s-%03d", prefix, i))
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		out[i] = obj
	}
	return out
}

// NewWidget and NewConfigMap are newObj functions for Create.
func NewWidget() client.Object    { return &testapi.Widget{} }
func NewConfigMap() client.Object { return &corev1.ConfigMap{} }

// NamesIn returns the sorted names of the objects in s.
func NamesIn(objs []client.Object, s ranges.Selection) []string {
	var names []string
	for _, o := range objs {
		if s.Contains(o) {
			names = append(names, o.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// Names returns the sorted names of a list's items.
func Names(t *testing.T, list client.ObjectList) []string {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.GetName())
	}
	slices.Sort(out)
	return out
}

// Timings are a Member's leader election timings.
type Timings struct{ Lease, Renew, Retry time.Duration }

// Short are the timings of most tests here: a 2 s lease renewed every
// 250 ms, given up after 1.5 s.
var Short = Timings{Lease: 2 * time.Second, Renew: 1500 * time.Millisecond, Retry: 250 * time.Millisecond}

// FieldOwner is the test Members' field manager.
const FieldOwner = "widgets-controller"

// StartMember runs a Member of the group name, with n ranges, its Leases
// in ns, as identity id, until the test ends or stop is called (which
// stops it gracefully and waits until it has given up its ranges).
func StartMember(t *testing.T, leases coordinationv1client.LeasesGetter, ns, name, id string, n int, tm Timings) (m *shard.Member, stop func()) {
	t.Helper()
	m = shard.NewMember(leases, FieldOwner)
	m.Namespace, m.Name, m.Identity, m.RangeCount = ns, name, id, n
	m.LeaseDuration, m.RenewDeadline, m.RetryPeriod, m.DrainTimeout = tm.Lease, tm.Renew, tm.Retry, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Start(ctx); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return m, stop
}

// WaitBalanced waits, at most limit, until ms hold every one of their
// ranges once between them, each its share, and returns how long it took.
func WaitBalanced(t *testing.T, limit time.Duration, ms ...*shard.Member) time.Duration {
	t.Helper()
	start := time.Now()
	n := ms[0].RangeCount
	share := (n + len(ms) - 1) / len(ms)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, limit, true, func(context.Context) (bool, error) {
		seen := map[string]int{}
		total := 0
		last = ""
		for _, m := range ms {
			held := m.Held()
			last += fmt.Sprintf("%s: %s; ", m.Identity, held)
			if len(held) > share {
				return false, nil
			}
			for _, h := range held {
				seen[h.String()]++
			}
			total += len(held)
		}
		return total == n && len(seen) == n, nil
	})
	if err != nil {
		t.Fatalf("the ranges were not balanced among %d replicas within %s: %s", len(ms), limit, last)
	}
	return time.Since(start)
}

// NoWatchList is a ListerWatcher that tells client-go's reflector it
// cannot stream lists: it lists, then watches.
type NoWatchList struct{ toolscache.ListerWatcher }

// IsWatchListSemanticsUnSupported reports true.
func (l NoWatchList) IsWatchListSemanticsUnSupported() bool { return true }
