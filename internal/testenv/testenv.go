// Package testenv starts one real control plane (controller-runtime envtest:
// kube-apiserver and etcd) per test package, for reconcilekit's own tests.
//
// A package's TestMain calls [Main]; tests then call [Env.Client] or read
// [Env.Config]. The binaries come from KUBEBUILDER_ASSETS or, when that is
// unset, from the cache that "make test" (cmd/envtest-assets) fills.
// When they are missing the tests that need them fail with a message saying
// how to get them; outside CI (CI unset) they are skipped instead, never
// silently in CI.
package testenv

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/envtestassets"
)

// Options configures [Main].
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CustomResourceDefinition
	// manifests installed before the tests run.
	CRDDirectoryPaths []string
	// AddToScheme registers the test's own types; client-go's built-in types
	// are always registered.
	AddToScheme []func(*runtime.Scheme) error
	// PureBenchmarks says that the package's benchmarks need no API server,
	// so a run that selects no tests (-run '^$', as `go test -bench` runs
	// are written) starts none.
	PureBenchmarks bool
}

// Env is a running control plane. The zero value is "not started": its
// methods skip or fail the calling test with the reason.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Scheme knows client-go's types and those added through Options.
	Scheme *runtime.Scheme
	// Assets is the directory of the control-plane binaries (and kubectl,
	// when it holds one).
	Assets string

	reason string
	te     *envtest.Environment
}

// Main starts envtest, fills env, runs the package's tests, stops envtest and
// exits with the tests' code. Call it from TestMain.
func Main(m *testing.M, env *Env, opts Options) {
	os.Exit(run(m, env, opts))
}

// MissingAssetsMessage says how to obtain the control-plane binaries.
const MissingAssetsMessage = "no kube-apiserver/etcd binaries: run `make test`, or " +
	"`export KUBEBUILDER_ASSETS=$(go run ./cmd/envtest-assets)` from the repository root " +
	"(builds them from the Go module proxy, ~10 min once, then cached), or point KUBEBUILDER_ASSETS at setup-envtest's binaries"

func run(m *testing.M, env *Env, opts Options) int {
	flag.Parse()
	env.Scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(env.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	for _, add := range opts.AddToScheme {
		if err := add(env.Scheme); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
	}

	// A fuzzing run (its coordinator and each worker process runs TestMain)
	// exercises pure functions: a control plane per process would only slow
	// it down.
	if lookup("test.fuzz") != "" || lookup("test.fuzzworker") == "true" ||
		(opts.PureBenchmarks && lookup("test.run") == "^$") {
		env.reason = "no API server started for a fuzzing or benchmark-only run"
		return m.Run()
	}

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if d, err := envtestassets.Dir(envtestassets.Versions()); err == nil && envtestassets.Complete(d, "kube-apiserver", "etcd") {
			assets = d
		}
	}
	if !envtestassets.Complete(assets, "kube-apiserver", "etcd") {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "testenv: FAIL:", MissingAssetsMessage)
			return 1
		}
		env.reason = MissingAssetsMessage
		fmt.Fprintln(os.Stderr, "testenv: tests that need an API server will be skipped:", MissingAssetsMessage)
		return m.Run()
	}

	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    len(opts.CRDDirectoryPaths) > 0,
		Scheme:                   env.Scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := te.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: starting envtest:", err)
		return 1
	}
	// Tests create many objects quickly; client-go's default 5 QPS would
	// make them slow without proving anything.
	cfg.QPS, cfg.Burst = 500, 1000
	env.Config = cfg
	env.Assets = assets
	env.te = te
	code := m.Run()
	if err := te.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping envtest:", err)
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

// Require skips the test when no control plane is running (only possible
// outside CI).
func (e *Env) Require(t testing.TB) {
	t.Helper()
	if e == nil || e.Config == nil {
		reason := "testenv.Main was not called"
		if e != nil && e.reason != "" {
			reason = e.reason
		}
		t.Skip(reason)
	}
}

// Client returns a new uncached client to the API server: every read goes to
// the server, so tests see exactly what it stored.
func (e *Env) Client(t testing.TB) client.Client {
	t.Helper()
	e.Require(t)
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("testenv: new client: %v", err)
	}
	return c
}

// Namespace creates a fresh namespace for one test and returns its name, so
// tests in a package do not see each other's objects. It is not deleted:
// envtest has no namespace controller to finish the deletion, and the whole
// control plane is thrown away when the package's tests end.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	c := e.Client(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := c.Create(t.Context(), ns); err != nil {
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
	user, err := e.te.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("testenv: add user: %v", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("testenv: kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl returns the path of the kubectl binary among the assets. It fails
// the test in CI when there is none, and skips it elsewhere.
func (e *Env) Kubectl(t testing.TB) string {
	t.Helper()
	e.Require(t)
	path := filepath.Join(e.Assets, "kubectl")
	if !envtestassets.Complete(e.Assets, "kubectl") {
		msg := "no kubectl in " + e.Assets + ": run `make test`, which builds it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}
