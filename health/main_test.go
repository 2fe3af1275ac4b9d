package health_test

import (
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

// TestMain starts one control plane for the package with real controllers
// for the children: kube-controller-manager (Deployments, ReplicaSets,
// Jobs, ...) and kwok as the kubelet of one node, so that Pods run and
// statuses come from the controllers that write them in a cluster.
func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		ControllerManager: true,
		Kwok:              true,
		// BenchmarkChildStatusChange starts a control plane of its own,
		// without the controllers: a benchmark-only run needs this one not.
		PureBenchmarks: true,
		Shared:         true,
	})
}
