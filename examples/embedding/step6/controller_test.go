package step6_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step6"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: the Website is Ready only once its Deployment is available
// (kube-controller-manager and kwok run it), at creation and after a change
// of replicas, and a converged resync writes nothing.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[6], guidetest.Expect{
		ReadyMeansAvailable: true,
		ResyncWrites:        nil,
		Failure:             metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step6.ReasonInvalidHostname},
		Terminal:            true,
	})
}
