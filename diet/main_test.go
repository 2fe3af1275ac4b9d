package diet_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's one control plane, for the tests and benchmarks of
// caches on the diet.
var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}
