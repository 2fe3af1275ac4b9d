package requeue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/requeue"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}

// calls records when each Widget was reconciled.
type calls struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

func (c *calls) add(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.times == nil {
		c.times = map[string][]time.Time{}
	}
	c.times[name] = append(c.times[name], time.Now())
	return len(c.times[name])
}

func (c *calls) get(name string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.times[name]...)
}

// waitFor polls cond until it holds; the generous timeout only bounds a
// broken run, it is not what the test measures.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startController runs a real manager and controller for Widgets in ns on
// envtest; every reconcile goes through r and then p.Result. It returns the
// recorder of everything the controller logged.
func startController(t *testing.T, ns string, p *requeue.Policy, r func(ctx context.Context, req reconcile.Request, n int) (ctrl.Result, error)) (*calls, *recorder) {
	t.Helper()
	env.Require(t)
	rec := &recorder{}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 rec.logger(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	c := &calls{}
	err = ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Named("widget").
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
			n := c.add(req.Name)
			res, err := r(ctx, req, n)
			return p.Result(ctx, req, res, err)
		}))
	if err != nil {
		t.Fatalf("new controller: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return c, rec
}

func createWidgets(t *testing.T, ns string, names ...string) {
	t.Helper()
	c := env.Client(t)
	for _, n := range names {
		if err := c.Create(t.Context(), &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
}

// TestPolicyPermanentIsReconciledOnce runs a controller where one Widget
// fails permanently and another fails with an unknown (transient) error.
// While the transient one is retried five more times by the workqueue's
// backoff, the permanent one is never reconciled again.
func TestPolicyPermanentIsReconciledOnce(t *testing.T) {
	reconciletest.CheckGoroutines(t)
	ns := env.Namespace(t)
	var p requeue.Policy
	c, rec := startController(t, ns, &p, func(_ context.Context, req reconcile.Request, _ int) (ctrl.Result, error) {
		if req.Name == "permanent" {
			return ctrl.Result{}, errors.Permanent(errors.New("spec.schedule is not a time"))
		}
		return ctrl.Result{}, errors.New("flaky dependency")
	})
	createWidgets(t, ns, "permanent", "transient")

	waitFor(t, "both widgets reconciled once", func() bool {
		return len(c.get("permanent")) >= 1 && len(c.get("transient")) >= 1
	})
	base := len(c.get("transient"))
	waitFor(t, "five more retries of the transient widget", func() bool { return len(c.get("transient")) >= base+5 })
	if n := len(c.get("permanent")); n != 1 {
		t.Errorf("permanent widget reconciled %d times while the transient one was retried 5 times, want 1", n)
	}
	// controller-runtime logs both as errors: a terminal error is reported,
	// just not retried.
	if n := len(rec.errorsWith("Reconciler error")); n < 2 {
		t.Errorf("controller-runtime logged %d reconciler errors, want the permanent and the transient ones", n)
	}
}

// TestPolicyConflictRequeuesQuietly makes the reconciler hit a real 409 from
// kube-apiserver (a stale update of a ConfigMap the controller does not
// watch, so no watch event can retrigger it). The only way to a second
// reconcile is Policy's requeue, and nothing is logged at error level.
func TestPolicyConflictRequeuesQuietly(t *testing.T) {
	ns := env.Namespace(t)
	cl := env.Client(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Data: map[string]string{"k": "0"}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	p := requeue.Policy{ConflictDelay: 300 * time.Millisecond}
	var conflictErr error
	c, rec := startController(t, ns, &p, func(ctx context.Context, _ reconcile.Request, n int) (ctrl.Result, error) {
		if n > 1 {
			return ctrl.Result{}, nil
		}
		stale := cm.DeepCopy()
		fresh := cm.DeepCopy()
		fresh.Data["k"] = "1"
		if err := cl.Update(ctx, fresh); err != nil {
			return ctrl.Result{}, err
		}
		stale.Data["k"] = "2"
		conflictErr = cl.Update(ctx, stale)
		return ctrl.Result{}, conflictErr
	})
	createWidgets(t, ns, "w")

	waitFor(t, "a second reconcile", func() bool { return len(c.get("w")) >= 2 })
	if !apierrors.IsConflict(conflictErr) {
		t.Fatalf("the stale update returned %v, want a 409 conflict from the server", conflictErr)
	}
	times := c.get("w")
	if gap := times[1].Sub(times[0]); gap < p.ConflictDelay {
		t.Errorf("second reconcile %v after the first, want >= ConflictDelay %v", gap, p.ConflictDelay)
	}
	if errs := rec.errorsWith(""); len(errs) != 0 {
		t.Errorf("logged at error level: %q, want nothing for a conflict", errs)
	}
}

// TestPolicyThrottledWaitsForTheServersDelay returns a 429 with Retry-After
// 1s once; the next reconcile comes no sooner than 1s later (a lower bound
// the workqueue guarantees; without Policy the error would be retried after
// 5ms).
func TestPolicyThrottledWaitsForTheServersDelay(t *testing.T) {
	ns := env.Namespace(t)
	var p requeue.Policy
	c, rec := startController(t, ns, &p, func(_ context.Context, _ reconcile.Request, n int) (ctrl.Result, error) {
		if n == 1 {
			return ctrl.Result{}, apierrors.NewTooManyRequests("the server is busy", 1)
		}
		return ctrl.Result{}, nil
	})
	createWidgets(t, ns, "w")
	waitFor(t, "a second reconcile", func() bool { return len(c.get("w")) >= 2 })
	times := c.get("w")
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("second reconcile %v after the first, want >= the server's 1s", gap)
	}
	if errs := rec.errorsWith(""); len(errs) != 0 {
		t.Errorf("logged at error level: %q, want nothing for throttling", errs)
	}
}

// TestPolicyBackoffSpacesRetries configures a per-key Backoff: three
// transient failures are retried after growing delays (50ms, 100ms, 200ms
// at least), then success forgets the key. The failures are logged by
// Policy, since controller-runtime never sees an error.
func TestPolicyBackoffSpacesRetries(t *testing.T) {
	ns := env.Namespace(t)
	b := &requeue.Backoff{Base: 50 * time.Millisecond, Jitter: -1}
	p := requeue.Policy{Backoff: b}
	c, rec := startController(t, ns, &p, func(_ context.Context, _ reconcile.Request, n int) (ctrl.Result, error) {
		if n <= 3 {
			return ctrl.Result{}, errors.New("flaky dependency")
		}
		return ctrl.Result{}, nil
	})
	createWidgets(t, ns, "w")
	waitFor(t, "the fourth reconcile", func() bool { return len(c.get("w")) >= 4 })
	waitFor(t, "the key to be forgotten", func() bool { return b.Len() == 0 })
	times := c.get("w")
	for i, want := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond} {
		if gap := times[i+1].Sub(times[i]); gap < want {
			t.Errorf("retry %d came %v after the failure, want >= %v", i+1, gap, want)
		}
	}
	if n := len(rec.errorsWith("Reconciler error")); n != 0 {
		t.Errorf("controller-runtime logged %d reconciler errors, want 0: Policy returned no error", n)
	}
	if n := len(rec.errorsWith("Reconcile failed, requeueing with backoff")); n != 3 {
		t.Errorf("Policy logged %d failures, want 3", n)
	}
}
