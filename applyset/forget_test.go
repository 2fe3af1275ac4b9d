package applyset_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestAGoneParentIsForgotten proves a parent waiting for its child's kind
// to be installed is forgotten once it is gone, however it went, and not
// only past MaxWaiting: Widgets, reconciled by a reconcile.Loop whose Gone
// is the Set's Forget, each with a Gadget of a kind not installed.
//
//   - One deleted while the controller watches: its delete event's
//     reconcile finds it gone, and the Set forgets it.
//   - One deleted while no controller watched it (applied, then deleted,
//     before the manager started: no event will ever say so): it is still
//     remembered once the manager runs, and the event of a
//     CustomResourceDefinition of its group wakes it; that reconcile finds
//     it gone, and the Set forgets it.
//
// The gauge reconcilekit_applyset_entries{map="waiting"} counts the
// waiting parents, and is back where it began once both are forgotten.
func TestAGoneParentIsForgotten(t *testing.T) {
	gaugeOf := func(m string) float64 {
		return metricstest.Settled(t, "reconcilekit_applyset_entries", map[string]string{"map": m})
	}
	gauge := func() float64 { return gaugeOf("waiting") }
	before, dueBefore := gauge(), gaugeOf("due")
	c := env.Client(t)
	ns := env.Namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".gadgets.test" // the CRD outlives the test
	set := applyset.New(c, testOwner)
	apply := func(ctx context.Context, w *testapi.Widget) (applyset.Result, error) {
		gadget := &unstructured.Unstructured{}
		gadget.SetAPIVersion(group + "/v1")
		gadget.SetKind("Gadget")
		gadget.SetNamespace(w.Namespace)
		gadget.SetName(w.Name)
		return set.Apply(ctx, w, []applyset.Child{{Object: gadget, Health: applyset.Exists}})
	}
	waiting := func() []types.NamespacedName { return applyset.WaitingFor(set, group) }
	waitUntil := func(what string, want []types.NamespacedName) {
		t.Helper()
		var got []types.NamespacedName
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = waiting()
			return cmp.Equal(want, got, cmpopts.EquateEmpty()), nil
		})
		if err != nil {
			t.Fatalf("%s: the Set remembers %v as waiting, want %v", what, got, want)
		}
		if g := gauge() - before; g != float64(len(want)) {
			t.Errorf("%s: the gauge counts %v waiting parents more than before, want %d", what, g, len(want))
		}
	}
	newWidget := func(name string) *testapi.Widget {
		t.Helper()
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: testapi.WidgetSpec{Message: name}}
		if err := c.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	unwatched := newWidget("unwatched")
	if _, err := apply(t.Context(), unwatched); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), unwatched); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitGone(t.Context(), unwatched); err != nil {
		t.Fatal(err)
	}

	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	tracker := &freshness.Tracker{Informers: mgr.GetCache()}
	loop := reconcile.New(tracker.Wrap(mgr.GetClient()), testOwner, func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		res, err := apply(ctx, w)
		if err != nil {
			return reconcile.Progress{}, err
		}
		return reconcile.Progress{Reason: "Applied"}.WithChildren(res.Health()), nil
	})
	loop.Gone = set.Forget
	err = ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}).
		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, set.EnqueueWaiting()).
		Named("forget-" + ns).
		Complete(loop)
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)

	watched := newWidget("watched")
	key := func(w client.Object) types.NamespacedName { return client.ObjectKeyFromObject(w) }
	waitUntil("a Widget created under the manager", []types.NamespacedName{key(unwatched), key(watched)})
	if err := c.Delete(t.Context(), watched); err != nil {
		t.Fatal(err)
	}
	waitUntil("a Widget deleted while watched", []types.NamespacedName{key(unwatched)})

	crd := gadgetCRD(group)
	if err := c.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	waitUntil("a Widget deleted while not watched, once its group's CRD woke it", nil)
	// Its wake-ups, scheduled by the CRD's events, end at the first that
	// finds it forgotten.
	var due float64
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		due = gaugeOf("due") - dueBefore
		return due == 0, nil
	})
	if err != nil {
		t.Errorf("the gauge counts %v parents more than before with wake-ups scheduled, want 0", due)
	}
}
