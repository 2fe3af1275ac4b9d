package ranges_test

import (
	"os"
	"testing"

	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
)

// env is a control plane whose kube-apiserver runs with the feature gate
// ShardedListAndWatch on.
var env shardtest.Env

func TestMain(m *testing.M) { os.Exit(shardtest.Main(m, &env)) }
