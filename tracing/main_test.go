package tracing_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/otlptest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's control plane: a kube-apiserver that sends every
// span it records to receiver.
var (
	env      testenv.Env
	receiver *otlptest.Receiver
)

func TestMain(m *testing.M) {
	r, err := otlptest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: an OTLP receiver:", err)
		os.Exit(1)
	}
	receiver = r
	dir, err := os.MkdirTemp("", "tracing-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	flags, err := r.APIServerFlags(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../internal/testapi/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		APIServerFlags:    flags,
		PureBenchmarks:    true,
	})
}
