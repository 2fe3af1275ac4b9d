package bench_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/internal/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../config/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{atv1.AddToScheme},
	})
}
