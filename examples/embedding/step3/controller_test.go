package step3_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step3"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: the finalizer package changes what happens under
// concurrent writers, not what a converged resync costs: the same as step
// 2, and the DNS record still goes with the Website.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[3], guidetest.Expect{
		ResyncWrites: []string{"update deployments"},
		Failure:      metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step3.ReasonInvalidHostname},
		Terminal:     true,
	})
}
