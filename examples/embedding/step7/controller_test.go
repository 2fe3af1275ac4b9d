package step7_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step7"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: the Website's children, written as a set, are as step6's:
// Ready only once its Deployment is available, a converged resync writes
// nothing, and deleting the Website deletes its DNS record.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[7], guidetest.Expect{
		ReadyMeansAvailable: true,
		ResyncWrites:        nil,
		Failure:             metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step7.ReasonInvalidHostname},
		Terminal:            true,
	})
}
