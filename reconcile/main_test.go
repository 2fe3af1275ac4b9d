package reconcile_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's one control plane. Every envtest test in
// reconcile_test uses it.
var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		Shared:            true,
	})
}
