package bench_test

import (
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	// The controllers' logs would drown the figures; failures are reported
	// by the tests themselves.
	log.SetLogger(logr.Discard())
	// The benchmark starts an audited control plane of its own (see
	// startPlane): a benchmark-only run needs no shared one.
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../config/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{atv1.AddToScheme},
		PureBenchmarks:    true,
	})
}
