package step4_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step4"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: with a drift.Writer, server defaults are not drift: a
// converged resync writes nothing at all.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[4], guidetest.Expect{
		ResyncWrites: nil,
		Failure:      metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step4.ReasonInvalidHostname},
		Terminal:     true,
	})
}
