package ginkgosuite_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

// What the scaffold's suite_test.go declares.
var (
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment
)

// env is testenv on the suite's control plane.
var env *testenv.Env

// TestMain starts the suite's control plane once for every test of the
// package (the scaffold starts it in BeforeSuite, which only the Ginkgo
// suite would see), and stops it after them.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets, err := testenv.FindAssets()
	if err != nil {
		// No binaries: the tests skip (testenv's Require says how to get
		// them), or fail in CI.
		if os.Getenv("CI") != "" {
			println("FAIL:", err.Error())
			return 1
		}
		env = &testenv.Env{}
		return m.Run()
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{"../../../../../internal/testapi/crd"},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if cfg, err = testEnv.Start(); err != nil {
		println("FAIL:", err.Error())
		return 1
	}
	defer func() { _ = testEnv.Stop() }()
	if env, err = testenv.Attach(testEnv, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{testapi.AddToScheme}}); err != nil {
		println("FAIL:", err.Error())
		return 1
	}
	return m.Run()
}

// TestControllers runs the Ginkgo suite, as the scaffold does.
func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	env.Require(GinkgoTB())
	var err error
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

// startWidgetLoop runs a reconcile.Loop of Widgets under a testenv manager
// in namespace ns until the test ends.
func startWidgetLoop(t testing.TB, ns string) *testenv.Manager {
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	loop := reconcile.New(mgr.GetClient(), "widget-controller", func(_ context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		w.Status.Phase = "Said " + w.Spec.Message
		return reconcile.Progress{Reason: "Said"}, nil
	})
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Named("widget-" + ns).Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr
}

var _ = Describe("A Widget", func() {
	It("becomes Ready under a testenv manager on the suite's control plane", func(ctx SpecContext) {
		tb := GinkgoTB()
		ns := env.Namespace(tb)
		startWidgetLoop(tb, ns)
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "hello"}}
		Expect(k8sClient.Create(ctx, w)).To(Succeed())
		Expect(env.WaitForCondition(ctx, w, status.TypeReady, metav1.ConditionTrue)).To(Succeed())
		Expect(w.Status.Phase).To(Equal("Said hello"))
	})
})

// TestAPlainTestSharesTheSuitesControlPlane: a Go test of the same package
// uses the same API server as the Ginkgo suite: the Env's config is the
// suite's, and an object the suite's client creates is the one the Loop
// under testenv makes Ready.
func TestAPlainTestSharesTheSuitesControlPlane(t *testing.T) {
	env.Require(t)
	if env.Config.Host != cfg.Host {
		t.Fatalf("testenv's API server %s, the suite's %s: two control planes", env.Config.Host, cfg.Host)
	}
	ns := env.Namespace(t)
	startWidgetLoop(t, ns)
	suiteClient, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Spec: testapi.WidgetSpec{Message: "shared"}}
	if err := suiteClient.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForCondition(t.Context(), w, status.TypeReady, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
}

// TestAttachLeavesTheControlPlaneToItsOwner: Stop of an attached Env
// forgets the control plane and leaves it running for the suite; Attach
// refuses an environment that was not started.
func TestAttachLeavesTheControlPlaneToItsOwner(t *testing.T) {
	env.Require(t)
	for _, te := range []*envtest.Environment{nil, {}} {
		if _, err := testenv.Attach(te, testenv.Options{}); err == nil {
			t.Errorf("Attach(%v): no error, want one saying the environment is not started", te)
		}
	}
	other, err := testenv.Attach(testEnv, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	if other.Config != nil {
		t.Errorf("a stopped Env still has a config")
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var namespaces corev1.NamespaceList
	if err := c.List(t.Context(), &namespaces); err != nil {
		t.Errorf("the suite's control plane after the attached Env stopped: %v", err)
	}
}
