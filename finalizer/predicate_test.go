package finalizer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

func TestPredicateUpdate(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	widget := func(mutate func(*testapi.Widget)) *testapi.Widget {
		w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1, Finalizers: []string{dnsFinalizer}}}
		if mutate != nil {
			mutate(w)
		}
		return w
	}
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"deletion begins", widget(nil), widget(func(w *testapi.Widget) { w.DeletionTimestamp = &now }), true},
		{"finalizer added (our own AddAll: no reconcile needed)", widget(nil), widget(func(w *testapi.Widget) { w.Finalizers = append(w.Finalizers, keepFinalizer) }), false},
		{"one of two finalizers removed", widget(func(w *testapi.Widget) { w.Finalizers = append(w.Finalizers, keepFinalizer) }), widget(nil), true},
		{"finalizer removed by someone else", widget(nil), widget(func(w *testapi.Widget) { w.Finalizers = nil }), true},
		{"label change only", widget(nil), widget(func(w *testapi.Widget) { w.Labels = map[string]string{"a": "b"} }), false},
		{"status change while already deleting", widget(func(w *testapi.Widget) { w.DeletionTimestamp = &now }),
			widget(func(w *testapi.Widget) { w.DeletionTimestamp = &now; w.Status.Phase = "x" }), false},
		{"missing old object", nil, widget(nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := finalizer.Predicate().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})
			if got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
	p := finalizer.Predicate()
	if !p.Create(event.CreateEvent{Object: widget(nil)}) || !p.Delete(event.DeleteEvent{Object: widget(nil)}) ||
		!p.Generic(event.GenericEvent{Object: widget(nil)}) {
		t.Errorf("Predicate must let create, delete and generic events through")
	}
}

// TestWatchTrapGenerationChangedPredicateOnDeletion pins down which update
// events GenerationChangedPredicate lets through when deletion of an object
// with a finalizer begins, on a real API server and on controller-runtime's
// fake client, and that Predicate lets all of them through. If a future API
// server changes behaviour this test says so.
func TestWatchTrapGenerationChangedPredicateOnDeletion(t *testing.T) {
	realClient := env.Client(t)
	ns := env.Namespace(t)
	fakeClient := fake.NewClientBuilder().WithScheme(env.Scheme).Build()
	tests := []struct {
		name string
		c    client.Client
		obj  client.Object
		// wantGenerationChanged is what GenerationChangedPredicate says
		// about the update that sets the deletionTimestamp.
		wantGenerationChanged bool
	}{
		{"custom resource on a real API server (generation bumped)", realClient,
			&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Finalizers: []string{dnsFinalizer}}}, true},
		{"ConfigMap on a real API server (no generation)", realClient,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Finalizers: []string{dnsFinalizer}}}, false},
		{"custom resource on the fake client (generation not bumped)", fakeClient,
			&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w", Finalizers: []string{dnsFinalizer}, Generation: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if err := tt.c.Create(ctx, tt.obj); err != nil {
				t.Fatal(err)
			}
			old := tt.obj.DeepCopyObject().(client.Object)
			if err := tt.c.Get(ctx, client.ObjectKeyFromObject(tt.obj), old); err != nil {
				t.Fatal(err)
			}
			if err := tt.c.Delete(ctx, tt.obj); err != nil {
				t.Fatal(err)
			}
			updated := tt.obj.DeepCopyObject().(client.Object)
			if err := tt.c.Get(ctx, client.ObjectKeyFromObject(tt.obj), updated); err != nil {
				t.Fatal(err)
			}
			if updated.GetDeletionTimestamp().IsZero() {
				t.Fatalf("no deletionTimestamp after delete")
			}
			e := event.UpdateEvent{ObjectOld: old, ObjectNew: updated}
			if got := (predicate.GenerationChangedPredicate{}).Update(e); got != tt.wantGenerationChanged {
				t.Errorf("GenerationChangedPredicate.Update = %v, want %v (generation %d -> %d)",
					got, tt.wantGenerationChanged, old.GetGeneration(), updated.GetGeneration())
			}
			if !predicate.Or(predicate.GenerationChangedPredicate{}, finalizer.Predicate()).Update(e) {
				t.Errorf("Or(GenerationChangedPredicate, Predicate()).Update = false, want true")
			}
		})
	}
}

// TestDeletionReachesAReconcilerThatFiltersEvents runs real controllers on
// the API server whose watches are filtered, and checks that deleting an
// object still runs its cleanup and lets it go. Widgets are watched with
// GenerationChangedPredicate alone (enough on a real server, see above);
// ConfigMaps with Or(GenerationChangedPredicate, Predicate()).
func TestDeletionReachesAReconcilerThatFiltersEvents(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	cleaned := map[string]bool{}
	var set finalizer.Registry[client.Object]
	if err := set.Register(dnsFinalizer, finalizer.Func[client.Object](func(ctx context.Context, obj client.Object) error {
		mu.Lock()
		defer mu.Unlock()
		cleaned[obj.GetName()] = true
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	fw := finalizer.NewWriter(mgr.GetClient(), testOwner)
	fw.APIReader = mgr.GetAPIReader()
	reconciler := func(newObj func() client.Object) reconcile.Reconciler {
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			obj := newObj()
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, obj); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			if !obj.GetDeletionTimestamp().IsZero() {
				_, err := set.Finalize(ctx, fw, obj)
				return ctrl.Result{}, err
			}
			_, err := set.AddMissing(ctx, fw, obj)
			return ctrl.Result{}, err
		})
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("widgets").
		For(&testapi.Widget{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconciler(func() client.Object { return &testapi.Widget{} })); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("configmaps").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, finalizer.Predicate()))).
		Complete(reconciler(func() client.Object { return &corev1.ConfigMap{} })); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c := env.Client(t)
	for _, obj := range []client.Object{
		&testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "widget"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmap"}},
	} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(obj)
		waitFor(t, "the controller to add its finalizer to "+key.Name, func() (bool, error) {
			err := c.Get(t.Context(), key, obj)
			return len(obj.GetFinalizers()) == 1, err
		})
		if err := c.Delete(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the controller to clean up and let "+key.Name+" go", func() (bool, error) {
			err := c.Get(t.Context(), key, obj)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		mu.Lock()
		if !cleaned[key.Name] {
			t.Errorf("%s is gone but its cleanup did not run", key.Name)
		}
		mu.Unlock()
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}
