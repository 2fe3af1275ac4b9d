package bench_test

import (
	"flag"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

// parallelTests is how many of the package's parallel tests run at once
// when -test.parallel is not given: all of them. They are the scenarios
// with a control plane and processes of their own (the side-by-side smoke;
// the sharded audit proof and the API server restarts, which take turns,
// see planeMu), which spend most of their time waiting for schedules,
// Leases and restarts, and the tests that run the At in this process on the
// shared control plane, which take turns too (lockManagers). go test's
// default, the number of CPUs, would let a test waiting for its turn hold
// back another.
const parallelTests = 16

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			panic(err)
		}
	}
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
