// Package testenv runs an operator's controller against a real API server
// in its tests: a kube-apiserver and etcd started by controller-runtime's
// envtest, the test's CRDs installed, and the controller under a real
// manager whose every request is counted.
//
// It gives a test:
//
//   - a control plane per package ([Main], from TestMain) or by hand
//     ([Start]), with a namespace per test ([Env.Namespace]) so parallel
//     tests share it safely, which does not outlive the test process when
//     a test panics or runs past -timeout (on Linux);
//   - one plane for the packages whose tests keep to themselves, instead of
//     one each ([Options.Shared], served by [Serve] or cmd/testenv-plane
//     and named in [PlanesEnv]), for a CI run of many packages;
//   - uncached clients that read what the server stored ([Env.Client],
//     [Env.CountingClient]);
//   - a [Manager] per test: every request it sends, from every client
//     (cache lists and watches, client, API reader, event recorder, leader
//     election), is recorded in [Manager.Requests] at the transport, and
//     every reconcile is counted per object in [Manager.Reconciles];
//   - waits with a clear timeout message, naming what was awaited and the
//     object as last seen ([Env.WaitFor], [Env.WaitForCondition],
//     [Env.WaitGone] for a deletion, [Manager.WaitConverged]);
//   - a cache that lags on purpose ([ManagerOptions.CacheDelay]), so a
//     test sees the stale reads production sees under load;
//   - on request, the controllers of a cluster beside the API server:
//     kube-controller-manager ([Options.ControllerManager]: Deployments,
//     ReplicaSets, Jobs, the garbage collector, ...) and kwok as the
//     kubelet of one node ([Options.Kwok]), so that the children an
//     operator creates get the statuses they get in a cluster.
//
// # Getting the binaries
//
// The kube-apiserver and etcd binaries come from KUBEBUILDER_ASSETS (from
// setup-envtest, say) or from the cache that reconcilekit's command fills by
// building them from the Go module proxy, reachable where setup-envtest's
// download bucket is not:
//
//	export KUBEBUILDER_ASSETS=$(go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets)
//
// The first run takes about 10 minutes on 2 cores (kube-apiserver; etcd
// about 1.5 minutes), later runs none. Without binaries, tests that need
// the API server are skipped with that advice, or fail when the CI
// environment variable is set.
//
// # A complete test
//
// A WidgetReconciler that sets the Ready condition, tested in a package
// whose CRD manifests are in config/crd:
//
//	var env testenv.Env
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, &env, testenv.Options{
//			CRDDirectoryPaths: []string{"../config/crd"},
//			AddToScheme:       []func(*runtime.Scheme) error{v1.AddToScheme},
//		})
//	}
//
//	func TestWidgetConverges(t *testing.T) {
//		t.Parallel()
//		ctx, ns := t.Context(), env.Namespace(t)
//		mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: time.Second})
//		if err != nil {
//			t.Fatal(err)
//		}
//		r := &WidgetReconciler{Client: mgr.GetClient()}
//		if err := ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}).Complete(mgr.Reconciler(r)); err != nil {
//			t.Fatal(err)
//		}
//		mgr.Run(t)
//
//		w := &v1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
//		if err := env.Client(t).Create(ctx, w); err != nil {
//			t.Fatal(err)
//		}
//		ready := func() bool { return testenv.HasCondition(w, "Ready", metav1.ConditionTrue) }
//		if err := mgr.WaitConverged(ctx, w, "Ready", ready); err != nil {
//			t.Fatal(err)
//		}
//
//		// Converged: the next resync reconciles again and writes nothing.
//		mgr.Requests.Reset()
//		key := client.ObjectKeyFromObject(w)
//		if err := mgr.Reconciles.Wait(ctx, key, mgr.Reconciles.Count(key)+1); err != nil {
//			t.Fatal(err)
//		}
//		if writes := mgr.Requests.Writes(); len(writes) > 0 {
//			t.Errorf("a resync of a converged Widget wrote %v", writes)
//		}
//	}
//
// A timed-out wait reads:
//
//	testenv: gave up after 1m0s waiting for Widget "test-x7k2p/w" to be Ready (context deadline exceeded); last seen:
//	  apiVersion: testing.reconcilekit.io/v1
//	  kind: Widget
//	  ...
//
// # Beside a Ginkgo suite
//
// A kubebuilder project's suite_test.go starts an envtest.Environment of
// its own in BeforeSuite. Start it in TestMain instead and [Attach] to it,
// and the Ginkgo specs and the package's Go tests share that one control
// plane (testenv.Main would start a second); specs pass GinkgoTB() where
// testenv wants a testing.TB:
//
//	func TestMain(m *testing.M) {
//		testEnv = &envtest.Environment{CRDDirectoryPaths: []string{"../../config/crd/bases"}}
//		cfg, err := testEnv.Start()
//		...
//		env, err = testenv.Attach(testEnv, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{v1.AddToScheme}})
//		...
//		code := m.Run()
//		_ = testEnv.Stop()
//		os.Exit(code)
//	}
//
// Package internal/ginkgosuite of this one is such a suite, run by the
// module's tests.
//
// # Stale reads on purpose
//
// controller-runtime's client reads from an informer cache and writes to
// the API server, so a read right after a write often returns the object
// before it. Under load in production that window is long; in a test it is
// a few milliseconds and bugs hide in it. With
// ManagerOptions.CacheDelay (a [reconciletest.CacheDelay]) every watch
// event reaches the manager's cache late, in order: give it a
// testingclock.FakeClock and the cache stays stale until the test steps the
// clock.
//
// # Counting
//
// [Manager.Requests] records at the transport, so it sees what the API
// server sees from the controller's process, the event recorder's writes
// and leader election's lease renewals included; each record has the verb,
// group/resource, namespace, name, status code and user agent. Events are
// sent asynchronously by the recorder: one recorded in a reconcile may
// reach the server after that reconcile returned. For the requests of one
// client, wrap it with [reconciletest.Counter.Wrap] or use
// [Env.CountingClient].
//
// This package imports controller-runtime's envtest; its parent,
// reconciletest, does not, and needs no API server.
package testenv
