package step5_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step5"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// TestWebsite: the Loop does what steps 1 to 4 wrote by hand, and a
// converged resync (which reconcile.Predicate lets through) writes
// nothing.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[5], guidetest.Expect{
		ResyncWrites: nil,
		Failure:      metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step5.ReasonInvalidHostname},
		Terminal:     true,
	})
}
