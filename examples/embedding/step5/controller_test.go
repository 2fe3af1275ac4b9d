package step5_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step5"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, guidetest.CRDs("../config/crd"))
}

// expect is what step 5 does in the guide's scenario.
var expect = guidetest.Expect{
	ResyncWrites: nil,
	Failure:      metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: step5.ReasonInvalidHostname},
	Terminal:     true,
}

// TestWebsite: the Loop does what steps 1 to 4 wrote by hand, and a
// converged resync (which reconcile.Predicate lets through) writes
// nothing.
func TestWebsite(t *testing.T) {
	guidetest.Test(t, &env, guidetest.Steps[5], expect)
}

// TestABadHostnameIsTerminalWhenAResyncReadsTheCacheBeforeTheLoopsWrites is
// the CI failure of TestWebsite/bad_hostname ("reconcile error = <nil>
// (terminal false)"), made certain: a resync reconciles the Website after
// the Loop wrote its finalizer and its Stalled status, before the cache
// holds them. The Loop's read is then older than its own writes, and it
// answers with a quiet requeue and no error (reconcile.Loop's Freshness),
// deciding nothing. The Website's failure is still terminal: the scenario's
// check must not take that retry for the Website's outcome.
func TestABadHostnameIsTerminalWhenAResyncReadsTheCacheBeforeTheLoopsWrites(t *testing.T) {
	// Longer than the fixture's resync period (a second): a resync comes
	// while the cache lags.
	f := guidetest.StartLagging(t, &env, guidetest.Steps[5], &reconciletest.CacheDelay{Delay: 2500 * time.Millisecond})
	site := f.Create(t, "bad", "Shop_Example.com")
	guidetest.BadHostname(t, f, site, expect)

	retried := false
	for i, r := range f.Results(site) {
		switch {
		case r.Err == nil && r.Result.IsZero():
			t.Errorf("reconcile %d of the bad Website succeeded", i+1)
		case r.Err == nil:
			retried = true
		}
	}
	if !retried {
		t.Errorf("no reconcile read the cache before the Loop's writes reached it (reconciles: %+v): the test proves nothing", f.Results(site))
	}
}
