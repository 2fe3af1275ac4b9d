package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/envstart"
	"github.com/reconcilekit/reconcilekit/internal/envtestassets"
)

// DefaultWaitTimeout bounds [Env.WaitFor] and [Manager.WaitConverged] when
// neither their context nor [Options.WaitTimeout] says otherwise. It only
// stops a broken test from hanging: no wait lasts longer than it must.
const DefaultWaitTimeout = time.Minute

// ErrNoAssets is wrapped by the error [Start] and [FindAssets] return when
// no kube-apiserver and etcd binaries can be found; its message says how to
// get them.
var ErrNoAssets = errors.New("testenv: no kube-apiserver/etcd binaries: " +
	"export KUBEBUILDER_ASSETS=$(go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets) " +
	"(builds them from the Go module proxy: about 10 minutes once on 2 cores, then cached), " +
	"or point KUBEBUILDER_ASSETS at setup-envtest's binaries")

// Options configures a control plane.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of
	// CustomResourceDefinition manifests to install; a path that does not
	// exist is an error.
	CRDDirectoryPaths []string
	// CRDs are CustomResourceDefinitions to install, built in Go.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// AddToScheme registers the test's own types (the AddToScheme of each
	// API package); client-go's built-in types are always registered.
	AddToScheme []func(*runtime.Scheme) error
	// WaitTimeout bounds the waits of [Env.WaitFor] and
	// [Manager.WaitConverged] whose context has no deadline; the default
	// is [DefaultWaitTimeout].
	WaitTimeout time.Duration
	// PureBenchmarks says that the package's benchmarks need no API
	// server, so [Main] starts none for a run that selects no tests
	// (-run '^$', as benchmark runs are written).
	PureBenchmarks bool
	// ControllerManager runs kube-controller-manager beside the API server,
	// so that the objects an operator creates get the statuses a cluster
	// gives them: the controllers of Deployments, ReplicaSets,
	// StatefulSets, DaemonSets, Jobs and CronJobs, the garbage collector,
	// and those of namespaces, service accounts, EndpointSlices and
	// PersistentVolume binding. Without kubelets, Pods stay Pending: add
	// Kwok. It needs kube-controller-manager among the binaries:
	// go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets
	// -controller-manager builds it; without it, tests skip as without the
	// API server (or fail in CI).
	ControllerManager bool
	// Kwok runs kwok (sigs.k8s.io/kwok) as the kubelet of one node,
	// [NodeName], and binds every Pod without a node to it, as a scheduler
	// would (envtest runs none), unless its nodeSelector asks for labels
	// the node lacks: that Pod is marked Unschedulable and stays Pending. A Pod is Running and Ready half a second
	// after it is bound; a container whose command is "false" exits 1 half
	// a second later, failing its Pod; a Job's other Pods succeed after a
	// second. It needs kwok among the binaries (envtest-assets -kwok
	// v0.8.0).
	Kwok bool
	// APIServerFlags are flags of kube-apiserver beside envtest's, by name
	// without the dashes, such as {"tracing-config-file": path} for an API
	// server that records its spans (docs/tracing.md) or {"feature-gates":
	// "..."}. Nil adds none.
	APIServerFlags map[string]string
	// Shared lets [Main] run the package's tests on a control plane that
	// other packages' tests use at the same time, one that [PlanesEnv]
	// names and that runs what ControllerManager and Kwok ask for (no
	// APIServerFlags): a plane of [Serve], which make test starts for the
	// library's own packages. Main then starts no plane, installs the
	// package's CRDs there (see [CRDHashAnnotation]) and leaves the plane
	// running when the tests end. Without such a plane Main starts one of
	// its own, as when Shared is false.
	//
	// Set it only when the tests keep to themselves: every object in a
	// namespace of their own ([Env.Namespace]), no cluster-scoped object
	// under a fixed name, managers restricted to the test's namespaces
	// ([ManagerOptions.Namespace]), no assertion about what the whole
	// cluster holds or what the API server counted, no test that stops or
	// restarts the plane.
	Shared bool
}

// Env is a running control plane: a real kube-apiserver and etcd, started by
// controller-runtime's envtest, with the test's CRDs installed. It is safe
// for concurrent use by parallel tests; give each test its own namespace
// ([Env.Namespace]) and, when it runs a controller, its own [Manager].
//
// The zero value is "not started": its methods skip the calling test, or
// fail it in CI, with the reason. [Main] fills an Env for a package's tests;
// [Start] returns one.
type Env struct {
	// Config reaches the API server as a cluster admin. Its QPS and Burst
	// are raised (500, 1000) so that tests creating many objects are not
	// throttled by client-go, and it asks for responses uncompressed
	// (DisableCompression): over loopback, the gzip the API server applies
	// to a large list only costs both sides CPU (about 6% of the CPU of
	// package track's tests, whose lists hold 10,000 objects).
	Config *rest.Config
	// Scheme knows client-go's types and those of Options.AddToScheme.
	Scheme *runtime.Scheme
	// Assets is the directory of the control-plane binaries.
	Assets string

	waitTimeout time.Duration
	reason      string
	te          *envtest.Environment
	reader      client.Client
	// attached: te was started by someone else, who stops it.
	attached bool
	// shared is the plane file of the shared plane the Env is attached
	// to (Options.Shared), te nil; kubeconfig reaches that plane (a
	// string, so that Env stays comparable).
	shared     string
	kubeconfig string
	// What Options.ControllerManager and Options.Kwok started (a pointer,
	// so that Env stays comparable).
	extra *components
	// users serialises envtest's AddUser: its certificate authority
	// numbers certificates without a lock, and parallel tests ask for
	// kubeconfigs at once.
	users *sync.Mutex
	// watchdog stops the processes this Env started if the test process
	// dies without stopping them.
	watchdog *watchdog
}

// addUser adds a cluster-admin user named name to te, one at a time.
func (e *Env) addUser(te *envtest.Environment, name string) (*envtest.AuthenticatedUser, error) {
	e.users.Lock()
	defer e.users.Unlock()
	return te.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
}

// FindAssets returns the directory of the control-plane binaries tests
// should use: KUBEBUILDER_ASSETS when it holds kube-apiserver and etcd, else
// the cache that cmd/envtest-assets fills (for the versions it defaults to,
// or RECONCILEKIT_KUBE_VERSION and RECONCILEKIT_ETCD_VERSION). Otherwise it
// returns an error wrapping [ErrNoAssets].
func FindAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if envtestassets.Complete(dir, "kube-apiserver", "etcd") {
			return dir, nil
		}
		return "", fmt.Errorf("%w (KUBEBUILDER_ASSETS=%s lacks kube-apiserver or etcd)", ErrNoAssets, dir)
	}
	dir, err := envtestassets.Dir(envtestassets.Versions())
	if err == nil && envtestassets.Complete(dir, "kube-apiserver", "etcd") {
		return dir, nil
	}
	return "", ErrNoAssets
}

// Start starts a control plane with the CRDs and types of opts. Stop it
// with [Env.Stop]. Without binaries it returns an error wrapping
// [ErrNoAssets]. Most tests want [Main] instead, which starts one per
// package and decides whether to skip.
//
// If the test process ends without stopping it (a test that panics or
// runs past -timeout, an interrupt, os.Exit from a test), a watchdog (a
// small sh process per Env, which Stop dismisses) kills the plane's
// processes and removes their directories; before, they kept running, with
// their CPU, memory and ports. It finds envtest's kube-apiserver and etcd
// through /proc (Linux); elsewhere it guards only kube-controller-manager
// and kwok.
func Start(opts Options) (*Env, error) {
	env := &Env{}
	if err := env.start(opts); err != nil {
		return nil, err
	}
	return env, nil
}

// Attach returns an Env on a control plane that someone else started and
// will stop: the envtest.Environment of a Ginkgo suite (a kubebuilder
// project's suite_test.go), so that its specs and the tests that use the
// Env share one kube-apiserver and etcd instead of starting two per
// package. te must be started (te.Config set). opts.AddToScheme builds the
// Env's scheme (te's scheme is left alone); opts' CRDs are installed too,
// when te did not install them already. [Env.Stop] forgets the control
// plane and leaves it running; te's owner stops it. [Env.Kubectl] finds
// kubectl in te.BinaryAssetsDirectory or, failing that, where [FindAssets]
// looks. opts.ControllerManager and opts.Kwok start beside te's API
// server, from the same directory, and Env.Stop stops them. If the test
// process dies before Env.Stop (a test that panics or runs past -timeout),
// a watchdog ends te's kube-apiserver and etcd too, when this process
// started them, as for [Start]: no one is left to stop them.
func Attach(te *envtest.Environment, opts Options) (*Env, error) {
	if te == nil || te.Config == nil {
		return nil, errors.New("testenv: Attach needs a started envtest.Environment (te.Config is nil: call te.Start first)")
	}
	s, err := newScheme(opts)
	if err != nil {
		return nil, err
	}
	if len(opts.CRDDirectoryPaths) > 0 || len(opts.CRDs) > 0 {
		if _, err := envtest.InstallCRDs(te.Config, envtest.CRDInstallOptions{
			Paths: opts.CRDDirectoryPaths, CRDs: opts.CRDs, ErrorIfPathMissing: len(opts.CRDDirectoryPaths) > 0, Scheme: s,
		}); err != nil {
			return nil, fmt.Errorf("testenv: installing CRDs: %w", err)
		}
	}
	cfg := rest.CopyConfig(te.Config)
	tune(cfg)
	reader, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("testenv: client: %w", err)
	}
	assets := te.BinaryAssetsDirectory
	if assets == "" {
		assets, _ = FindAssets()
	}
	e := &Env{Config: cfg, Scheme: s, Assets: assets, te: te, reader: reader, attached: true, waitTimeout: opts.WaitTimeout, users: new(sync.Mutex)}
	if e.waitTimeout <= 0 {
		e.waitTimeout = DefaultWaitTimeout
	}
	if err := e.startControllers(te, opts); err != nil {
		_ = e.stopControllers()
		return nil, err
	}
	certDir, dataDir := planeDirs(te)
	e.watchdog = guard(planeProcesses(certDir, dataDir, e.extra))
	return e, nil
}

// planeDirs returns the directories of te's kube-apiserver (certificates)
// and etcd (data), which appear on their command lines.
func planeDirs(te *envtest.Environment) (certDir, dataDir string) {
	if cp := te.ControlPlane; cp.APIServer != nil && cp.Etcd != nil {
		return cp.APIServer.CertDir, cp.Etcd.DataDir
	}
	return "", ""
}

// tune sets on cfg what [Env.Config] says of it: QPS and Burst raised, no
// compression.
func tune(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.DisableCompression = true
}

func newScheme(opts Options) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("testenv: scheme: %w", err)
	}
	for _, add := range opts.AddToScheme {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("testenv: scheme: %w", err)
		}
	}
	return s, nil
}

// start fills env with a running control plane.
func (e *Env) start(opts Options) error {
	if e.Scheme == nil {
		s, err := newScheme(opts)
		if err != nil {
			return err
		}
		e.Scheme = s
	}
	assets, err := FindAssets()
	if err != nil {
		return err
	}
	if err := needAssets(assets, opts); err != nil {
		return err
	}
	// A fresh plane when envtest gives up on the first too early (it waits
	// a fixed 5 s for the namespace "default", which a loaded machine can
	// exceed); envstart stops a plane that failed to start.
	te, cfg, err := envstart.Start(func(int) *envtest.Environment {
		te := &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			CRDDirectoryPaths:        opts.CRDDirectoryPaths,
			CRDs:                     opts.CRDs,
			ErrorIfCRDPathMissing:    len(opts.CRDDirectoryPaths) > 0,
			Scheme:                   e.Scheme,
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		for name, value := range opts.APIServerFlags {
			te.ControlPlane.GetAPIServer().Configure().Set(name, value)
		}
		return te
	})
	if err != nil {
		return fmt.Errorf("testenv: starting the control plane from %s: %w", assets, err)
	}
	tune(cfg)
	reader, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		_ = te.Stop()
		return fmt.Errorf("testenv: client: %w", err)
	}
	e.Config, e.Assets, e.te, e.reader, e.users = cfg, assets, te, reader, new(sync.Mutex)
	if err := e.startControllers(te, opts); err != nil {
		_ = e.stopControllers()
		_ = te.Stop()
		e.Config, e.te, e.reader = nil, nil, nil
		return err
	}
	e.waitTimeout = opts.WaitTimeout
	if e.waitTimeout <= 0 {
		e.waitTimeout = DefaultWaitTimeout
	}
	certDir, dataDir := planeDirs(te)
	e.watchdog = guard(planeProcesses(certDir, dataDir, e.extra))
	return nil
}

// Stop stops the control plane; afterwards the Env's methods skip the
// calling test, as on the zero value. Calling it on an Env that is not
// running does nothing. An Env of [Attach] only forgets the control plane:
// whoever started it stops it.
func (e *Env) Stop() error {
	if e == nil || (e.te == nil && e.shared == "") {
		return nil
	}
	err := e.stopControllers()
	if !e.attached {
		err = errors.Join(err, e.te.Stop())
	}
	// Dismissed even when something failed to stop: what it knows may
	// have exited, and its directories hold the logs the error names.
	_ = e.watchdog.dismiss()
	e.Config, e.te, e.reader, e.watchdog = nil, nil, nil, nil
	e.shared, e.kubeconfig = "", ""
	e.reason = "testenv: the control plane was stopped"
	if err != nil {
		return fmt.Errorf("testenv: stopping the control plane: %w", err)
	}
	return nil
}

// Main starts a control plane, fills env, runs the package's tests, stops
// the control plane and exits with the tests' code. Call it from TestMain:
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
// When there are no binaries, the run fails in CI (CI set) with a message
// saying how to get them; elsewhere the tests run and those that need the
// API server skip, with the same message. A fuzzing run (its coordinator and
// workers run TestMain too) starts no control plane: fuzz targets test pure
// functions. env.Scheme is filled in every case. A test that panics or runs
// past -timeout ends the process before Main stops the plane: its watchdog
// does (see [Start]). With [Options.Shared], Main attaches the tests to a
// shared plane instead, when [PlanesEnv] names one that matches.
func Main(m *testing.M, env *Env, opts Options) {
	os.Exit(run(m, env, opts))
}

func run(m *testing.M, env *Env, opts Options) int {
	flag.Parse()
	s, err := newScheme(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.Scheme = s
	if lookup("test.fuzz") != "" || lookup("test.fuzzworker") == "true" ||
		(opts.PureBenchmarks && lookup("test.run") == "^$") {
		env.reason = "testenv: no API server is started for a fuzzing or benchmark-only run"
		return m.Run()
	}
	path, p, err := sharedPlane(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if path != "" {
		if err := env.attachShared(opts, path, p); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "testenv: the tests run on the shared control plane of", path)
	} else if err := env.start(opts); err != nil {
		if !errors.Is(err, ErrNoAssets) || os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		env.reason = err.Error()
		fmt.Fprintln(os.Stderr, "testenv: tests that need an API server will be skipped:", err)
		return m.Run()
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func lookup(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// Require skips the test when no control plane is running, which happens
// only outside CI.
func (e *Env) Require(t testing.TB) {
	t.Helper()
	if e == nil || e.Config == nil {
		reason := "testenv: the control plane was not started (call testenv.Main from TestMain)"
		if e != nil && e.reason != "" {
			reason = e.reason
		}
		t.Skip(reason)
	}
}

// Client returns a new uncached client to the API server: every read goes
// to the server, so a test sees exactly what is stored. Its requests are not
// counted with a manager's.
func (e *Env) Client(t testing.TB) client.WithWatch {
	t.Helper()
	e.Require(t)
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("testenv: new client: %v", err)
	}
	return c
}

// Namespace creates a namespace for one test and returns its name, so that
// parallel tests sharing the control plane do not see each other's objects.
// It is not deleted: envtest runs no namespace controller to finish the
// deletion, and the control plane is thrown away with the package's tests.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	e.Require(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.reader.Create(t.Context(), ns); err != nil {
		t.Fatalf("testenv: create namespace: %v", err)
	}
	return ns.Name
}

// Kubeconfig writes a kubeconfig for a cluster-admin user of the control
// plane into the test's temporary directory and returns its path, for real
// clients such as kubectl.
func (e *Env) Kubeconfig(t testing.TB) string {
	t.Helper()
	e.Require(t)
	data := []byte(e.kubeconfig)
	if e.kubeconfig == "" {
		user, err := e.addUser(e.te, "testenv-admin")
		if err != nil {
			t.Fatalf("testenv: add user: %v", err)
		}
		if data, err = user.KubeConfig(); err != nil {
			t.Fatalf("testenv: kubeconfig: %v", err)
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("testenv: kubeconfig: %v", err)
	}
	return path
}

// Kubectl returns the path of the kubectl binary among the assets
// (cmd/envtest-assets builds one). Without one it fails the test in CI and
// skips it elsewhere.
func (e *Env) Kubectl(t testing.TB) string {
	t.Helper()
	e.Require(t)
	if !envtestassets.Complete(e.Assets, "kubectl") {
		msg := "testenv: no kubectl in " + e.Assets +
			": go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets builds one"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Join(e.Assets, "kubectl")
}
