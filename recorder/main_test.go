package recorder

import (
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's control plane, for the tests that compare what the
// API server stores of a Recorder's events with what it stores of
// client-go's.
var env testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{
		// BenchmarkRetainedBytesPerEvent needs no API server.
		PureBenchmarks: true,
		Shared:         true,
	})
}
