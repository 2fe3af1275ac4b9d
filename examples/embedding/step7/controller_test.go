package step7_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/examples/embedding/internal/guidetest"
	"github.com/reconcilekit/reconcilekit/examples/embedding/step7"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
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

// TestWebsiteIsNeverReadyBeforeItsDeployment is step6's check on the set:
// every version of the Website the API server stored that says Ready is
// checked against its Deployment as stored just before it, which must be
// Current, at creation and after a change of replicas. The set's health
// comes from the children as its guarded client read or wrote them.
func TestWebsiteIsNeverReadyBeforeItsDeployment(t *testing.T) {
	t.Parallel()
	f := guidetest.Start(t, &env, guidetest.Steps[7])
	versions := reconciletest.RecordVersions(t, env.Client(t),
		[]client.ObjectList{&webv1.WebsiteList{}, &appsv1.DeploymentList{}}, client.InNamespace(f.Namespace))
	site := f.Create(t, "shop", "shop.example.com")
	f.WaitConverged(t, site)
	f.SetReplicas(t, site, 2)
	if err := versions.Wait(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name}}
	checked, err := versions.ConditionTrueOnlyWhen(site, "Ready", deployment, func(obj client.Object) error {
		h, err := health.Of(obj)
		if err == nil && h.Status != health.Current {
			err = fmt.Errorf("%s", h)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
	if checked < 2 {
		t.Errorf("checked %d versions of the Website saying Ready, want one at each of its two generations at least", checked)
	}
}
