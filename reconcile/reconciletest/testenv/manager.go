package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// ManagerOptions configures a [Manager]. Its zero value gives a manager
// that caches every namespace, with no leader election and
// controller-runtime's defaults otherwise.
type ManagerOptions struct {
	// Namespace, when set, restricts the manager's cache to that namespace
	// (a test's own, from [Env.Namespace]), so that parallel tests'
	// controllers do not see each other's objects, and holds the leader
	// election lease. It does not override Options.Cache.DefaultNamespaces.
	Namespace string
	// SyncPeriod, when set, is the cache's resync period: every cached
	// object is handed to the controllers again that often (with a little
	// jitter), as after a resync in production. A test of "a converged
	// object costs no writes" waits for one.
	SyncPeriod time.Duration
	// CacheDelay, when set, makes the manager's cache lag: every watch
	// event reaches it CacheDelay.Delay late (see
	// [reconciletest.CacheDelay]), so reconciles read objects older than
	// their own writes.
	CacheDelay *reconciletest.CacheDelay
	// LeaderElection runs the manager with leader election, as in
	// production: a Lease in Namespace (or "default") that it renews every
	// two seconds, writes that the manager's Requests count.
	LeaderElection bool
	// Options are the manager's options to start from. testenv sets the
	// Scheme (when nil) to the Env's, turns the metrics server off (when
	// its BindAddress is empty) and skips controller name validation (when
	// unset), so that every test may run the same controller.
	Options manager.Options
}

// Manager is a controller-runtime manager on the Env's control plane whose
// every request is counted: the cache's lists and watches, the client's
// reads and writes, the API reader, the event recorder and leader election
// all share one transport, wrapped by Requests. Set it up as any manager
// (ctrl.NewControllerManagedBy(mgr)...), with the reconciler wrapped by
// [Manager.Reconciler] to count reconciles per object, then start it with
// [Manager.Run] (or its own Start).
type Manager struct {
	manager.Manager
	// Requests records every request the manager sends.
	Requests *reconciletest.Counter
	// Reconciles counts the runs of reconcilers wrapped by
	// [Manager.Reconciler], per object.
	Reconciles *reconciletest.ReconcileCounter

	env *Env
}

// NewManager returns a manager on the control plane, not started, whose
// requests are all counted.
func (e *Env) NewManager(opts ManagerOptions) (*Manager, error) {
	if e == nil || e.Config == nil {
		return nil, errors.New("testenv: NewManager on an Env that is not running")
	}
	m := &Manager{Requests: &reconciletest.Counter{}, Reconciles: &reconciletest.ReconcileCounter{}, env: e}
	o := opts.Options
	if o.Scheme == nil {
		o.Scheme = e.Scheme
	}
	if o.Metrics.BindAddress == "" {
		o.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	if o.Controller.SkipNameValidation == nil {
		o.Controller.SkipNameValidation = ptr.To(true)
	}
	if opts.Namespace != "" && o.Cache.DefaultNamespaces == nil {
		o.Cache.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	if opts.SyncPeriod > 0 {
		o.Cache.SyncPeriod = ptr.To(opts.SyncPeriod)
	}
	if opts.CacheDelay != nil {
		var err error
		if o.Cache, err = opts.CacheDelay.CacheOptions(o.Cache); err != nil {
			return nil, fmt.Errorf("testenv: new manager: %w", err)
		}
	}
	if opts.LeaderElection {
		o.LeaderElection = true
		o.LeaderElectionReleaseOnCancel = true
		if o.LeaderElectionNamespace == "" {
			o.LeaderElectionNamespace = opts.Namespace
			if o.LeaderElectionNamespace == "" {
				o.LeaderElectionNamespace = "default"
			}
		}
		if o.LeaderElectionID == "" {
			o.LeaderElectionID = "testenv-" + utilrand.String(8)
		}
	}
	mgr, err := manager.New(m.Requests.WrapConfig(e.Config), o)
	if err != nil {
		return nil, fmt.Errorf("testenv: new manager: %w", err)
	}
	m.Manager = mgr
	return m, nil
}

// Reconciler wraps r so that [Manager.Reconciles] counts its runs per
// object. Give the wrapped reconciler to the controller:
//
//	err := ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}).Complete(mgr.Reconciler(r))
func (m *Manager) Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return m.Reconciles.Wrap(r)
}

// Run starts the manager in the background, waits until its cache has
// synced, and stops it when the test ends, failing the test if the manager
// failed.
func (m *Manager) Run(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("testenv: manager: %v", err)
		}
	})
	syncCtx, stop := context.WithTimeout(ctx, m.env.waitTimeout)
	defer stop()
	synced := make(chan bool, 1)
	go func() { synced <- m.GetCache().WaitForCacheSync(syncCtx) }()
	select {
	case ok := <-synced:
		if !ok {
			t.Fatalf("testenv: the manager's cache did not sync within %v", m.env.waitTimeout)
		}
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("testenv: the manager stopped at once: %v", err)
	}
}

// WaitConverged waits until obj, read through the manager's cache, makes
// met return true and no reconcile wrapped by [Manager.Reconciler] is
// running. From then on a reconciler that reads the cache sees the
// converged object, so any write it sends is one too many: the moment to
// [reconciletest.Counter.Reset] Requests before waiting for a resync.
//
// obj names the object (namespace and name) and receives each read; met
// inspects it. The wait ends with ctx, or after [Options.WaitTimeout]; the
// error then says what was awaited and shows the object as last seen.
func (m *Manager) WaitConverged(ctx context.Context, obj client.Object, what string, met func() bool) error {
	running := 0
	err := m.env.wait(ctx, m.GetCache(), obj, what, found(func() bool {
		running = 0
		if !met() {
			return false
		}
		running = m.Reconciles.Running()
		return running == 0
	}))
	if err != nil && running > 0 {
		return fmt.Errorf("%w\n(%d reconcile(s) still running)", err, running)
	}
	return err
}
