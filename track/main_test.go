package track_test

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's one control plane. Every envtest test in
// track_test uses it.
var env testenv.Env

func TestMain(m *testing.M) {
	if mode := os.Getenv(memoryChildEnv); mode != "" {
		// A process BenchmarkWatchMemory measures: it runs one manager
		// against the benchmark's control plane, and no tests.
		os.Exit(memoryChild(mode))
	}
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}
