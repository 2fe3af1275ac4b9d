package step2_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step2"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: with the status package, the bad hostname is Stalled (and
// Ready=False) with its reason, and a resync no longer writes the status:
// only the Deployment, whose server defaults still look like drift.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[2], guidetest.Expect{
		ResyncWrites: []string{"update deployments"},
		Failure:      metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step2.ReasonInvalidHostname},
		Terminal:     true,
	})
}
