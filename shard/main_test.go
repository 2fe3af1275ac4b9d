package shard_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is a control plane whose kube-apiserver runs with the feature gate
// ShardedListAndWatch on; nil when none could be started (the tests that
// need it skip, with reason, outside CI).
var (
	env    *testenv.Env
	reason = "no control plane was started"
)

// gate is the kube-apiserver flag value that turns sharded list and watch on.
const gate = "ShardedListAndWatch=true"

var envOptions = testenv.Options{
	CRDDirectoryPaths: []string{"../internal/testapi/crd"},
	AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
}

// TestMain starts envtest itself, to pass kube-apiserver the feature gate,
// and hands it to testenv.Attach: testenv.Options has no field for
// API-server flags.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// The Members log their ranges; the tests say what matters.
	log.SetLogger(logr.Discard())
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		reason = "no control plane for a fuzzing run"
		return m.Run()
	}
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		reason = "no control plane for a fuzzing run"
		return m.Run()
	}
	assets, err := testenv.FindAssets()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		reason = err.Error()
		fmt.Fprintln(os.Stderr, "shard: tests that need an API server will be skipped:", err)
		return m.Run()
	}
	te := controlPlane(assets)
	te.ControlPlane.GetAPIServer().Configure().Set("feature-gates", gate)
	if _, err := te.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting a control plane with --feature-gates=%s from %s: %v\n", gate, assets, err)
		return 1
	}
	code := 0
	env, err = testenv.Attach(te, envOptions)
	if err != nil {
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

// controlPlane returns an envtest environment with the test CRDs, as
// testenv would start it.
func controlPlane(assets string) *envtest.Environment {
	return &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        envOptions.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
}

// requireEnv skips the test when the gated control plane is not running.
func requireEnv(t *testing.T) *testenv.Env {
	t.Helper()
	if env == nil {
		t.Skip(reason)
	}
	return env
}
