package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/outage"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/recorder"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/track"
)

// TestALoopForgetsEveryObjectOnceItIsGone runs a Loop under a manager with
// every part that remembers something per object: a freshness Tracker that
// follows the manager's informers, a track.Tracker that Sync reads a
// ConfigMap per Widget through, a Policy that remembers the Widgets that
// fail (half of them, every reconcile), and a recorder.Recorder (a Ready
// or a Warning event per Widget). Once the Widgets are deleted, each part
// is empty: deleted while the manager watches, and deleted while it does
// not (its requests refused, its watches cut, as during an API server
// outage: it learns of the deletions only when it watches again). No
// goroutine of the library is left once the manager stops.
func TestALoopForgetsEveryObjectOnceItIsGone(t *testing.T) {
	for _, during := range []string{"watched", "outage"} {
		t.Run(during, func(t *testing.T) {
			reconciletest.CheckGoroutines(t)
			testALoopForgetsEveryObjectOnceItIsGone(t, during == "outage")
		})
	}
}

func testALoopForgetsEveryObjectOnceItIsGone(t *testing.T, cut bool) {
	const n = 20
	ns := env.Namespace(t)
	admin := env.Client(t)
	sw := &outage.Switch{}
	mgr, err := ctrl.NewManager(sw.Config(env.Config), ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh := &freshness.Tracker{Informers: mgr.GetCache()}
	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
	policy := &requeue.Policy{ReportAfter: -1}
	rec := recorder.New(mgr.GetClient(), "memory-test")
	if err := mgr.Add(rec); err != nil {
		t.Fatal(err)
	}
	loop := reconcile.New(fresh.Wrap(mgr.GetClient()), "memory-test", func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		reads := refs.For(client.ObjectKeyFromObject(w))
		defer reads.Done()
		if err := reads.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: "cm-" + w.Name}, &corev1.ConfigMap{}); err != nil {
			return reconcile.Progress{}, err
		}
		if w.Spec.Message == "fail" {
			return reconcile.Progress{}, errors.Transient(fmt.Errorf("widget %s fails", w.Name))
		}
		return reconcile.Progress{}, nil
	})
	loop.Policy, loop.References, loop.Recorder, loop.Freshness = policy, refs, rec, fresh
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Named("memory-" + ns).Complete(loop); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	var widgets []*testapi.Widget
	for i := range n {
		name := fmt.Sprintf("w-%02d", i)
		if err := admin.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-" + name}}); err != nil {
			t.Fatal(err)
		}
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if i%2 == 1 {
			w.Spec.Message = "fail"
		}
		if err := admin.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		widgets = append(widgets, w)
	}
	sizes := func() string {
		return fmt.Sprintf("policy %d, references %d, recorder %d, freshness %d", policy.Len(), refs.Len(), rec.Len(), fresh.Len())
	}
	poll := func(what string, ok func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return ok(), nil
		}); err != nil {
			t.Fatalf("%s: not within a minute (%s)", what, sizes())
		}
	}
	poll("every Widget read its ConfigMap, the failing ones remembered, each with an event", func() bool {
		return refs.Len() == n && policy.Len() == n/2 && rec.Len() >= n
	})
	if cut {
		sw.Cut()
	}
	for _, w := range widgets {
		if err := admin.Delete(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	if cut {
		// Long enough for the manager's retries to fail a few times.
		time.Sleep(2 * time.Second)
		if sw.Failed() == 0 {
			t.Fatal("the manager sent nothing during the outage: it was not cut off")
		}
		sw.Restore()
	}
	poll("every part empty once the Widgets are gone", func() bool {
		return policy.Len() == 0 && refs.Len() == 0 && rec.Len() == 0 && fresh.Len() == 0
	})
}
