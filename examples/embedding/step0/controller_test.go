package step0_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: the scaffolded reconciler works, writes the Deployment
// (every field the server defaulted looks like drift to it) and the status
// on every resync, and retries a hostname it can never accept, forever.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[0], guidetest.Expect{
		ResyncWrites: []string{"update deployments", "update/status websites"},
		Failure:      metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Failed"},
		Terminal:     false,
	})
}
