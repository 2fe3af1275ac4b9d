package guidetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

// Expect is what a step of the guide does, as Test checks it.
type Expect struct {
	// ResyncWrites are the writes of one reconcile of a converged Website,
	// as [Resync] lists them.
	ResyncWrites []string
	// Failure is the condition a Website whose hostname is not a DNS name
	// gets: its Type, Status and Reason are compared.
	Failure metav1.Condition
	// Terminal says that the error of such a Website is a terminal error,
	// which controller-runtime does not retry. Otherwise it must be
	// retried.
	Terminal bool
	// ReadyMeansAvailable says that the Website is Ready only when its
	// Deployment is available at its latest generation: whenever the
	// Website is seen Ready, its Deployment, read afterwards, is Current
	// (package health).
	ReadyMeansAvailable bool
}

// Test runs the guide's scenario on a step, in two parallel subtests:
//
//   - lifecycle: a Website converges (Ready, its Deployment controlled by
//     it, its DNS record published), a resync of it writes exactly
//     want.ResyncWrites, a change of spec.replicas reaches the Deployment,
//     and deleting the Website deletes its record through the finalizer;
//   - bad hostname: a Website whose hostname is not a DNS name gets
//     want.Failure, and its error is terminal or retried as want says.
func Test(t *testing.T, env *testenv.Env, step Step, want Expect) {
	t.Run("lifecycle", func(t *testing.T) {
		t.Parallel()
		f := Start(t, env, step)
		site := f.Create(t, "shop", "shop.example.com")
		f.WaitConverged(t, site)
		if want.ReadyMeansAvailable {
			f.CheckAvailable(t, site)
		}

		d := f.Deployment(t, site)
		if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != site.UID {
			t.Errorf("Deployment controller = %v, want the Website", ref)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.27" {
			t.Errorf("image = %q, want the CRD's default nginx:1.27", got)
		}
		record, err := f.Record(t, site)
		if err != nil {
			t.Fatalf("DNS record: %v", err)
		}
		wantData := map[string]string{"hostname": "shop.example.com", "target": site.Namespace + "/shop"}
		if diff := cmp.Diff(wantData, record.Data); diff != "" {
			t.Errorf("DNS record (-want +got):\n%s", diff)
		}

		if diff := cmp.Diff(want.ResyncWrites, f.MeasureResync(t, site).Writes); diff != "" {
			t.Errorf("writes of a converged resync (-want +got):\n%s", diff)
		}

		f.SetReplicas(t, site, 2)
		if want.ReadyMeansAvailable {
			f.CheckAvailable(t, site)
		}
		f.Delete(t, site)
	})

	t.Run("bad hostname", func(t *testing.T) {
		t.Parallel()
		f := Start(t, env, step)
		BadHostname(t, f, f.Create(t, "bad", "Shop_Example.com"), want)
	})
}

// BadHostname checks what the Fixture's step does with site, a Website
// whose hostname is not a DNS name: it gets want.Failure, and its error is
// terminal or retried as want says.
func BadHostname(t *testing.T, f *Fixture, site *webv1.Website, want Expect) {
	t.Helper()
	failed := func() bool {
		c, ok := status.FindCondition(site, want.Failure.Type)
		return ok && c.Status == want.Failure.Status && c.Reason == want.Failure.Reason
	}
	what := want.Failure.Type + "=" + string(want.Failure.Status) + " " + want.Failure.Reason
	if err := f.Manager.WaitConverged(t.Context(), site, what, failed); err != nil {
		t.Fatal(err)
	}
	// The cache holds the failed Website and no reconcile is running. The
	// last reconcile is not necessarily the one that wrote the condition:
	// a reconcile that read the cache before that write reached it may
	// have ended since, with a quiet requeue and no error (the Loop's
	// freshness guard, or a conflict under requeue.Policy), deciding
	// nothing. The next reconcile reads the failed Website as it stands
	// (a retry, or a resync within the fixture's second): its error is
	// the Website's.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	key := client.ObjectKeyFromObject(site)
	if err := f.Manager.Reconciles.Wait(ctx, key, f.Manager.Reconciles.Count(key)+1); err != nil {
		t.Fatalf("the failed Website was not reconciled again: %v", err)
	}
	err := f.LastError(site)
	if terminal := errors.Is(err, reconcile.TerminalError(nil)); err == nil || terminal != want.Terminal {
		t.Errorf("reconcile error = %v (terminal %v), want an error, terminal %v; its reconciles returned:\n%s",
			err, terminal, want.Terminal, f.resultLines(site))
	}
	if !want.Terminal {
		// Retried with backoff, without end.
		if err := f.Manager.Reconciles.Wait(ctx, key, f.Manager.Reconciles.Count(key)+2); err != nil {
			t.Errorf("the failing Website was not retried: %v", err)
		}
	}
}
