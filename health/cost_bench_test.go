package health_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

var parents = flag.Int("health.parents", 1000, "how many parents BenchmarkChildStatusChange reconciles")

// churn is what a Deployment's controller writes, one status update after
// another, when a node drain evicts two of its three Pods and they come
// back elsewhere: five status changes, two of which change its health
// (Current -> LessAvailable -> Current).
var churn = []func(*appsv1.DeploymentStatus){
	func(s *appsv1.DeploymentStatus) { s.ReadyReplicas, s.AvailableReplicas = 2, 2 },
	func(s *appsv1.DeploymentStatus) { s.ReadyReplicas, s.AvailableReplicas = 1, 1 },
	func(s *appsv1.DeploymentStatus) {
		s.Conditions[1].Status, s.Conditions[1].Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
	},
	func(s *appsv1.DeploymentStatus) { s.ReadyReplicas, s.AvailableReplicas = 2, 2 },
	func(s *appsv1.DeploymentStatus) {
		s.ReadyReplicas, s.AvailableReplicas = 3, 3
		s.Conditions[1].Status, s.Conditions[1].Reason = corev1.ConditionTrue, "MinimumReplicasAvailable"
	},
}

// healthChanges is how many of churn's status changes change the
// Deployment's health.
const healthChanges = 2

// BenchmarkChildStatusChange measures what a child's status change costs
// its parent, at -health.parents parents (1,000 by default), each with a
// Deployment of 3 replicas: the parents' reconciles and status writes per
// status change of a child, with health.Predicate on Owns() and without a
// filter. It starts a control plane of its own, without
// kube-controller-manager: it plays the Deployment controller itself, so
// that every status change of a child is one it made and counted. Run it
// once: go test ./health -run '^$' -bench ChildStatusChange -benchtime 1x.
func BenchmarkChildStatusChange(b *testing.B) {
	benchEnv, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
	})
	if err != nil {
		b.Skip(err)
	}
	defer func() { _ = benchEnv.Stop() }()
	for _, variant := range []struct {
		name   string
		filter bool
	}{{"health.Predicate", true}, {"no filter", false}} {
		b.Run(variant.name, func(b *testing.B) {
			for range b.N {
				reconciles, writes := churnCost(b, benchEnv, *parents, variant.filter)
				changes := float64(*parents * len(churn))
				b.ReportMetric(float64(reconciles)/changes, "reconciles/change")
				b.ReportMetric(float64(writes)/changes, "writes/change")
				b.ReportMetric(float64(writes)/float64(*parents*healthChanges), "writes/health-change")
				b.ReportMetric(float64(reconciles)/float64(*parents), "reconciles/parent")
			}
		})
	}
}

// TestAChildStatusChangeCostsAtMostOneParentWrite: 20 parents whose
// Deployments go through the churn; with health.Predicate, a parent is
// reconciled at most once per change of its child's health, and writes
// its status at most then: the three status changes that leave the
// health as it was cost nothing. Like the benchmark, it plays the
// Deployment controller on a control plane without one.
func TestAChildStatusChangeCostsAtMostOneParentWrite(t *testing.T) {
	env.Require(t) // where the package's control plane cannot start, this one cannot either
	plain, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Stop() })
	const n = 20
	reconciles, writes := churnCost(t, plain, n, true)
	t.Logf("%d status changes of %d children: %d reconciles, %d status writes of the parents", n*len(churn), n, reconciles, writes)
	if reconciles > n*healthChanges {
		t.Errorf("%d reconciles for %d changes of the children's health", reconciles, n*healthChanges)
	}
	if writes > reconciles {
		t.Errorf("%d status writes in %d reconciles", writes, reconciles)
	}
}

// churnCost starts n parents with their Deployments in a namespace of e,
// rolls the Deployments out, then puts each through the churn, and returns
// the parents' reconciles and writes during the churn. filter puts
// health.Predicate on Owns().
func churnCost(b testing.TB, e *testenv.Env, n int, filter bool) (reconciles, writes int) {
	ctx := b.Context()
	ns := e.Namespace(b)
	mgr, err := e.NewManager(testenv.ManagerOptions{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	p := &parent{client: mgr.GetClient(), desired: func(w *testapi.Widget) client.Object { return deployment(w) }}
	var preds []builder.OwnsOption
	if filter {
		preds = append(preds, builder.WithPredicates(health.Predicate()))
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&appsv1.Deployment{}, preds...).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(mgr.Reconciler(reconcile.New(mgr.GetClient(), fieldOwner, p.sync)))
	if err != nil {
		b.Fatal(err)
	}
	mgr.Run(b)
	api := e.Client(b)

	// n parents, each with its Deployment, rolled out by the benchmark.
	parallel(b, n, func(i int) error {
		return api.Create(ctx, newWidget(ns, fmt.Sprint("w", i), "nginx:1.27", 3))
	})
	parallel(b, n, func(i int) error {
		d := &appsv1.Deployment{}
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprint("w", i)}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			return api.Get(ctx, key, d) == nil, nil
		}); err != nil {
			return fmt.Errorf("deployment %s never created: %w", key, err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{progressed, availableCond}}
		return api.Status().Update(ctx, d)
	})
	quiesce(b, mgr, api, ns, n)

	mgr.Requests.Reset()
	mgr.Reconciles.Reset()
	if bb, ok := b.(*testing.B); ok {
		bb.ResetTimer()
		defer bb.StopTimer()
	}
	parallel(b, n, func(i int) error {
		d := &appsv1.Deployment{}
		for _, step := range churn {
			if err := api.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprint("w", i)}, d); err != nil {
				return err
			}
			step(&d.Status)
			if err := api.Status().Update(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
	quiesce(b, mgr, api, ns, n)

	for _, r := range mgr.Requests.Writes() {
		if r.Resource.Resource == "widgets" {
			writes++
		} else {
			b.Errorf("a write of something else than a parent's status: %v", r)
		}
	}
	return mgr.Reconciles.Total(), writes
}

// parallel runs f for 0..n-1 on 16 goroutines, failing b on the first
// error.
func parallel(b testing.TB, n int, f func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// quiesce waits until every parent is Ready and the manager has been
// idle, no reconcile running and no request sent, for a second.
func quiesce(b testing.TB, mgr *testenv.Manager, api client.Client, ns string, n int) {
	b.Helper()
	last, since := -1, time.Time{}
	err := wait.PollUntilContextTimeout(b.Context(), 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list testapi.WidgetList
		if err := api.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			if c, ok := status.FindCondition(&list.Items[i], status.TypeReady); ok && c.Status == metav1.ConditionTrue {
				ready++
			}
		}
		sent := len(mgr.Requests.Requests())
		if ready < n || mgr.Reconciles.Running() > 0 || sent != last {
			last, since = sent, time.Now()
			return false, nil
		}
		return time.Since(since) > time.Second, nil
	})
	if err != nil {
		b.Fatalf("the parents did not settle: %v", err)
	}
}
