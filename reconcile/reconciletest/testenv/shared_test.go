package testenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// sharedChild is set in the child process of
// TestMainAttachesASharedPackageToAServedPlane: its TestMain sets
// Options.Shared.
var sharedChild = os.Getenv("TESTENV_SHARED_CHILD") != ""

// testapiCRDs is the package's CRD directory, which TestMain installs.
const testapiCRDs = "../../../internal/testapi/crd"

// TestSharedPlaneChoosesThePlaneThatRunsWhatThePackageAsksFor: Main
// attaches a package only when it says Shared, asks for no flags of its
// own, and a plane that PlanesEnv names runs what it asks for (no more,
// no less); a file that is not there, or not a plane file, is an error.
func TestSharedPlaneChoosesThePlaneThatRunsWhatThePackageAsksFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	planeFile := func(name string, kcm, kwok bool) string {
		data, err := json.Marshal(map[string]any{"kubeconfig": []byte("apiVersion: v1\nkind: Config\n"), "controllerManager": kcm, "kwok": kwok})
		if err != nil {
			t.Fatal(err)
		}
		return write(name, data)
	}
	plain, nodes := planeFile("plain.json", false, false), planeFile("nodes.json", true, true)
	garbage := write("garbage.json", []byte("not json"))
	list := func(paths ...string) string { return strings.Join(paths, string(os.PathListSeparator)) }
	shared := testenv.Options{Shared: true}
	withNodes := testenv.Options{Shared: true, ControllerManager: true, Kwok: true}
	tests := []struct {
		name    string
		planes  string
		opts    testenv.Options
		want    string
		wantErr string
	}{
		{"no planes named", "", shared, "", ""},
		{"not shared", list(plain, nodes), testenv.Options{}, "", ""},
		{"shared, the plain plane", list(nodes, plain), shared, plain, ""},
		{"shared with controllers, the nodes plane", list(plain, nodes), withNodes, nodes, ""},
		{"a kwok node alone matches neither", list(plain, nodes), testenv.Options{Shared: true, Kwok: true}, "", ""},
		{"flags of its own", list(plain), testenv.Options{Shared: true, APIServerFlags: map[string]string{"v": "1"}}, "", ""},
		{"an empty entry is skipped", list("", plain), shared, plain, ""},
		{"a missing file", list(filepath.Join(dir, "gone.json"), plain), shared, "", "cannot be read"},
		{"not a plane file", list(garbage), shared, "", "not a plane file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(testenv.PlanesEnv, tt.planes)
			got, kcm, kwok, err := testenv.SharedPlane(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("SharedPlane = %q, %v; want %q", got, err, tt.want)
			}
			if got != "" && (kcm != tt.opts.ControllerManager || kwok != tt.opts.Kwok) {
				t.Errorf("the plane chosen runs controller manager %v, kwok %v; the package asks for %v, %v", kcm, kwok, tt.opts.ControllerManager, tt.opts.Kwok)
			}
		})
	}
}

// TestMainAttachesASharedPackageToAServedPlane: Serve writes a plane file
// once its plane is ready; a package with Options.Shared, run by a test
// process whose PlanesEnv names it, runs its tests there (its CRDs found
// installed, identical) and leaves the plane running when it ends; a
// package with another spec for the same CRD is refused, naming the CRD;
// packages installing a new CRD at once all succeed; when Serve's context
// ends, the file goes and the plane stops.
func TestMainAttachesASharedPackageToAServedPlane(t *testing.T) {
	if sharedChild {
		t.Skip("already the child process")
	}
	env.Require(t) // the binaries are there
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plane.json")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- testenv.Serve(ctx, testenv.Options{CRDDirectoryPaths: []string{testapiCRDs}}, path)
	}()
	stop := sync.OnceValue(func() error { cancel(); return <-served })
	defer stop()
	var data []byte
	for data == nil {
		select {
		case err := <-served:
			t.Fatalf("Serve ended before writing its plane file: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		var err error
		if data, err = os.ReadFile(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	var pf struct {
		Kubeconfig []byte `json:"kubeconfig"`
	}
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatalf("the plane file: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(pf.Kubeconfig)
	if err != nil {
		t.Fatalf("the plane file's kubeconfig: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// A package's test process on it: a plane file that runs more comes
	// first in the list, and is passed over.
	nodes := filepath.Join(t.TempDir(), "nodes.json")
	if err := os.WriteFile(nodes, []byte(`{"kubeconfig":"eA==","controllerManager":true,"kwok":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRunsOnTheSharedPlane$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_SHARED_CHILD=1", "TESTENV_SHARED_HOST="+cfg.Host,
		testenv.PlanesEnv+"="+nodes+string(os.PathListSeparator)+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRunsOnTheSharedPlane") {
		t.Fatalf("the package on the shared plane: %v\n%s", err, out)
	}
	if want := "testenv: the tests run on the shared control plane of " + path; !strings.Contains(string(out), want) {
		t.Errorf("the package's output lacks %q:\n%s", want, out)
	}
	var widgets testapi.WidgetList
	if err := c.List(t.Context(), &widgets, client.MatchingLabels{"shared-child": "yes"}); err != nil {
		t.Fatalf("the plane after the package ended: %v", err)
	}
	if len(widgets.Items) != 1 {
		t.Errorf("%d Widgets of the package on the plane after it ended, want 1", len(widgets.Items))
	}

	// Another spec for the same CRD is refused, naming it.
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if c, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "widgets.testing.reconcilekit.io"}, crd); err != nil {
		t.Fatal(err)
	}
	other := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}, Spec: *crd.Spec.DeepCopy()}
	other.Spec.Names.ShortNames = append(other.Spec.Names.ShortNames, "wdg")
	err = testenv.InstallShared(t.Context(), cfg, testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{other}})
	if err == nil || !strings.Contains(err.Error(), crd.Name) || !strings.Contains(err.Error(), testenv.CRDHashAnnotation) {
		t.Errorf("installing another spec of %s: err = %v, want one naming the CRD and %s", crd.Name, err, testenv.CRDHashAnnotation)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: crd.Name}, crd); err != nil || len(crd.Spec.Names.ShortNames) != 0 {
		t.Errorf("the installed CRD after the refusal: %v, short names %v; want it unchanged", err, crd.Spec.Names.ShortNames)
	}

	// Four packages installing a new CRD at once: all succeed, and the
	// API server serves it.
	gadgets := gadgetCRD()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			errs[i] = testenv.InstallShared(t.Context(), cfg, testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgets}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("four installs of a new CRD at once: %v", err)
	}

	if err := stop(); err != nil {
		t.Errorf("Serve, its context ended: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plane file after Serve ended: %v, want it gone", err)
	}
	if err := c.List(context.Background(), &corev1.NamespaceList{}); err == nil {
		t.Error("the plane still answers after Serve ended")
	}
}

// TestRunsOnTheSharedPlane is run by
// TestMainAttachesASharedPackageToAServedPlane in a child process whose
// TestMain set Options.Shared: its Env reaches the served plane, with the
// package's CRD, namespaces and a kubeconfig of that plane.
func TestRunsOnTheSharedPlane(t *testing.T) {
	if !sharedChild {
		t.Skip("run by TestMainAttachesASharedPackageToAServedPlane")
	}
	env.Require(t)
	if want := os.Getenv("TESTENV_SHARED_HOST"); env.Config.Host != want {
		t.Fatalf("the Env reaches %s, want the shared plane %s", env.Config.Host, want)
	}
	ns := env.Namespace(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Labels: map[string]string{"shared-child": "yes"}}}
	if err := env.Client(t).Create(t.Context(), w); err != nil {
		t.Fatalf("create a Widget on the shared plane: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != env.Config.Host {
		t.Errorf("Kubeconfig reaches %s, want the shared plane %s", cfg.Host, env.Config.Host)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), &testapi.Widget{}); err != nil {
		t.Errorf("a Get with Kubeconfig's user: %v", err)
	}
}
