package step1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step1"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: with a Policy, the hostname that is not a DNS name is a
// terminal error (not retried until the spec changes) with its own reason;
// a resync still writes the Deployment and the status.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[1], guidetest.Expect{
		ResyncWrites: []string{"update deployments", "update/status websites"},
		Failure:      metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: step1.ReasonInvalidHostname},
		Terminal:     true,
	})
}
