package track_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/track"
)

const fieldOwner = "track-test"

// metadataOnly is the cache of a manager that watches Secrets and
// ConfigMaps metadata-only, for a Tracker's handler: no managedFields in the
// cache either (track.CacheOptions).
func metadataOnly(t *testing.T) manager.Options {
	t.Helper()
	opts, err := track.CacheOptions(cache.Options{}, &corev1.Secret{}, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	return manager.Options{Cache: opts}
}

// widgetFollowingItsSecret runs, in ns, a reconcile.Loop of Widgets whose
// spec.message names a Secret of ns; Sync copies the Secret's "v" into
// status.phase. The Secrets are watched metadata-only and read through the
// Tracker.
func widgetFollowingItsSecret(t *testing.T, ns string, syncPeriod time.Duration) (*testenv.Manager, *track.Tracker) {
	t.Helper()
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: syncPeriod, Options: metadataOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
	loop := reconcile.New(mgr.GetClient(), fieldOwner, func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		reads := refs.For(client.ObjectKeyFromObject(w))
		defer reads.Done()
		var s corev1.Secret
		if err := reads.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.Message}, &s); err != nil {
			return reconcile.Progress{}, err
		}
		w.Status.Phase = string(s.Data["v"])
		return reconcile.Progress{Message: "v=" + w.Status.Phase}, nil
	})
	loop.References = refs
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
		Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	if err := refs.Validate(); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr, refs
}

// settled waits until key has not been reconciled for half a second (at
// most ten seconds) and returns its reconcile count.
func settled(t *testing.T, mgr *testenv.Manager, key client.ObjectKey) int {
	t.Helper()
	n, quiet := mgr.Reconciles.Count(key), 0
	for i := 0; i < 100 && quiet < 5; i++ {
		time.Sleep(100 * time.Millisecond)
		if m := mgr.Reconciles.Count(key); m != n || mgr.Reconciles.Running() > 0 {
			n, quiet = m, 0
			continue
		}
		quiet++
	}
	return n
}

// TestAReferrerFollowsItsSecret: a Widget names a Secret that does not
// exist yet: Stalled, reason ReferenceNotFound, the Secret named, and no
// retry while it stays missing. Its creation, each change of its data and
// its deletion reach the Widget through the watch alone (no requeue, no
// resync: the Loop asks for none and the sync period is controller-runtime's
// 10 hours); the figures are logged.
func TestAReferrerFollowsItsSecret(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, refs := widgetFollowingItsSecret(t, ns, 0)
	c := env.Client(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "creds"}}
	key := client.ObjectKeyFromObject(w)
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	stalledOnMissing := func(step string) {
		t.Helper()
		if err := env.WaitForCondition(ctx, w, status.TypeStalled, metav1.ConditionTrue); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		cond, _ := status.FindCondition(w, status.TypeStalled)
		if want := fmt.Sprintf("Secret %q not found", ns+"/creds"); cond.Reason != track.ReasonReferenceNotFound || cond.Message != want {
			t.Errorf("%s: Stalled %s: %q; want %s: %q", step, cond.Reason, cond.Message, track.ReasonReferenceNotFound, want)
		}
		// No retry while it is missing: a transient NotFound would have been
		// retried about nine times in two seconds (5ms, doubling). Counted
		// once the reconciles the Widget's own writes cause (a finalizer,
		// the status) are over: on a loaded machine their events can come
		// after the condition is visible.
		n := settled(t, mgr, key)
		time.Sleep(2 * time.Second)
		if more := mgr.Reconciles.Count(key) - n; more != 0 {
			t.Errorf("%s: %d reconciles in 2s while the Secret is missing; want none (no retry loop)", step, more)
		}
	}
	stalledOnMissing("absent")

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"v": []byte("1")}}
	// wake writes, then waits for the Widget's reconcile and reports how
	// long after the write it ran.
	wake := func(step string, write func() error) time.Duration {
		t.Helper()
		n := mgr.Reconciles.Count(key)
		start := time.Now()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Reconciles.Wait(ctx, key, n+1); err != nil {
			t.Fatalf("%s: the Widget was not reconciled: %v", step, err)
		}
		took := time.Since(start)
		t.Logf("%s: the Widget was reconciled %v after the write", step, took.Round(time.Millisecond))
		return took
	}
	wake("created", func() error { return c.Create(ctx, secret) })
	if err := env.WaitFor(ctx, w, "Ready with v=1", func() bool {
		return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) && w.Status.Phase == "1"
	}); err != nil {
		t.Fatal(err)
	}
	secret.Data["v"] = []byte("2")
	wake("changed", func() error { return c.Update(ctx, secret) })
	if err := env.WaitFor(ctx, w, "v=2", func() bool { return w.Status.Phase == "2" }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal([]types.NamespacedName{key}, refs.Referrers(secret)) {
		t.Errorf("Referrers(creds) = %v; want [%s]", refs.Referrers(secret), key)
	}
	wake("deleted", func() error { return c.Delete(ctx, secret) })
	stalledOnMissing("deleted again")

	// The Widget is deleted: the Loop forgets what it read.
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(refs.Referrers(secret)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := refs.Referrers(secret); len(got) > 0 {
		t.Errorf("the Widget is gone; the Secret's referrers are still %v", got)
	}
}

// TestAConvergedReferrerCostsNoRequest: with the cache resyncing every
// second, a Widget whose Secret did not change is reconciled again and
// again, and the process sends nothing: the Tracker serves its copy of the
// Secret, the Loop writes no status.
func TestAConvergedReferrerCostsNoRequest(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, _ := widgetFollowingItsSecret(t, ns, time.Second)
	c := env.Client(t)
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"v": []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "creds"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := mgr.WaitConverged(ctx, w, "Ready", func() bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) }); err != nil {
		t.Fatal(err)
	}
	mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(w)
	n := mgr.Reconciles.Count(key)
	if err := mgr.Reconciles.Wait(ctx, key, n+2); err != nil {
		t.Fatal(err)
	}
	if reqs := mgr.Requests.Requests(); len(reqs) > 0 {
		t.Errorf("two resyncs of a converged Widget sent %d requests; want none:\n%s", len(reqs), mgr.Requests)
	}
}

// TestTenThousandReferrersOverAHundredSecrets: 10,000 Widgets, each reading
// one of 100 Secrets (100 readers each). A change of one Secret enqueues
// exactly its 100 readers, once each, and no other Widget.
func TestTenThousandReferrersOverAHundredSecrets(t *testing.T) {
	t.Parallel()
	const referrers, secrets = 10_000, 100
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: metadataOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
	cached := mgr.GetClient()
	r := ctrlReconcilerFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		reads := refs.For(req.NamespacedName)
		defer reads.Done()
		var w testapi.Widget
		if err := cached.Get(ctx, req.NamespacedName, &w); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		var s corev1.Secret
		return ctrl.Result{}, reads.Get(ctx, types.NamespacedName{Namespace: ns, Name: w.Spec.Message}, &s)
	})
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
		WithOptions(controller.TypedOptions[ctrl.Request]{MaxConcurrentReconciles: 4}).
		Complete(mgr.Reconciler(r)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)

	c := env.Client(t)
	secretName := func(i int) string { return fmt.Sprintf("s-%03d", i%secrets) }
	create := func(n int, obj func(i int) client.Object) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for worker := range 16 {
			wg.Go(func() {
				for i := worker; i < n; i += 16 {
					if err := c.Create(ctx, obj(i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	start := time.Now()
	create(secrets, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName(i)}, Data: map[string][]byte{"v": []byte("1")}}
	})
	create(referrers, func(i int) client.Object {
		return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%05d", i)}, Spec: testapi.WidgetSpec{Message: secretName(i)}}
	})
	t.Logf("created 100 Secrets and 10,000 Widgets in %v", time.Since(start).Round(time.Second))
	waitFor := func(what string, met func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for !met() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("every Widget reconciled", func() bool { return len(mgr.Reconciles.Counts()) == referrers && mgr.Reconciles.Running() == 0 })
	t.Logf("all 10,000 reconciled %v after the first create; %d requests of the manager", time.Since(start).Round(time.Second), len(mgr.Requests.Requests()))

	readers := func(s int) []types.NamespacedName {
		var out []types.NamespacedName
		for i := s; i < referrers; i += secrets {
			out = append(out, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("w-%05d", i)})
		}
		return out
	}
	for s := range secrets {
		got := refs.Referrers(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName(s)}})
		if !slices.Equal(readers(s), got) {
			t.Fatalf("Referrers(%s): %d, want its %d readers", secretName(s), len(got), referrers/secrets)
		}
	}

	mgr.Reconciles.Reset()
	const changed = 42
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: secretName(changed)}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["v"] = []byte("2")
	start = time.Now()
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := readers(changed)
	waitFor("the changed Secret's readers reconciled", func() bool {
		counts := mgr.Reconciles.Counts()
		return len(counts) >= len(want) && mgr.Reconciles.Running() == 0
	})
	t.Logf("the %d readers of the changed Secret were reconciled within %v", len(want), time.Since(start).Round(time.Millisecond))
	// Anything else the change enqueued was enqueued with them: give the
	// workers a moment to have picked it up.
	time.Sleep(time.Second)
	counts := mgr.Reconciles.Counts()
	got := slices.SortedFunc(maps.Keys(counts), cmpKeys)
	if !slices.Equal(want, got) {
		t.Errorf("one Secret's change reconciled %d Widgets; want exactly its %d readers", len(got), len(want))
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s reconciled %d times; want once", k, n)
		}
	}
}

func cmpKeys(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

type ctrlReconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f ctrlReconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// TestADeploymentRollsOncePerDataChange: a Widget's Deployment carries the
// Hash of the ConfigMap the Widget names on its Pod template. Each change of
// the ConfigMap's data changes the template once (a new generation: what
// makes the Deployment controller roll out a new ReplicaSet); an update that
// changes only the ConfigMap's labels reconciles the Widget and writes
// nothing.
func TestADeploymentRollsOncePerDataChange(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: metadataOnly(t)})
	if err != nil {
		t.Fatal(err)
	}
	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
	children := drift.NewWriter(mgr.GetClient(), fieldOwner)
	loop := reconcile.New(mgr.GetClient(), fieldOwner, func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		reads := refs.For(client.ObjectKeyFromObject(w))
		defer reads.Done()
		var settings corev1.ConfigMap
		if err := reads.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.Message}, &settings); err != nil {
			return reconcile.Progress{}, err
		}
		hash, err := track.Hash(&settings)
		if err != nil {
			return reconcile.Progress{}, err
		}
		_, err = children.Ensure(ctx, deploymentOf(w, hash), drift.Owner(w))
		return reconcile.Progress{}, err
	})
	loop.References = refs
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&appsv1.Deployment{}).
		WatchesMetadata(&corev1.ConfigMap{}, refs.Enqueue(&corev1.ConfigMap{})).
		Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)

	c := env.Client(t)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"mode": "prod"}}
	if err := c.Create(ctx, settings); err != nil {
		t.Fatal(err)
	}
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: testapi.WidgetSpec{Message: "settings"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	generation := func(step string, want int64) *appsv1.Deployment {
		t.Helper()
		if err := env.WaitFor(ctx, dep, fmt.Sprintf("generation %d", want), func() bool { return dep.Generation == want }); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return dep.DeepCopy()
	}
	// update writes the ConfigMap, waits for the Widget's reconcile it
	// causes, then for the Deployment's generation.
	key := client.ObjectKeyFromObject(w)
	update := func(step string, change func(), want int64) *appsv1.Deployment {
		t.Helper()
		if err := mgr.WaitConverged(ctx, w, "Ready", func() bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) }); err != nil {
			t.Fatal(err)
		}
		n := mgr.Reconciles.Count(key)
		change()
		if err := c.Update(ctx, settings); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Reconciles.Wait(ctx, key, n+1); err != nil {
			t.Fatalf("%s: the Widget was not reconciled: %v", step, err)
		}
		return generation(step, want)
	}
	first := generation("created", 1)
	templates := map[string]bool{first.Spec.Template.Annotations[track.HashAnnotation]: true}
	second := update("data changed", func() { settings.Data["mode"] = "debug" }, 2)
	templates[second.Spec.Template.Annotations[track.HashAnnotation]] = true
	relabelled := update("labels changed, data the same", func() { settings.Labels = map[string]string{"edited": "yes"} }, 2)
	if relabelled.ResourceVersion != second.ResourceVersion {
		t.Errorf("an update of the ConfigMap's labels wrote the Deployment (resourceVersion %s → %s)", second.ResourceVersion, relabelled.ResourceVersion)
	}
	third := update("data changed again", func() { settings.Data["mode"] = "prod" }, 3)
	if third.Spec.Template.Annotations[track.HashAnnotation] != first.Spec.Template.Annotations[track.HashAnnotation] {
		t.Errorf("the data is back to the first: hash %s, want the first's %s", third.Spec.Template.Annotations[track.HashAnnotation], first.Spec.Template.Annotations[track.HashAnnotation])
	}
	if len(templates) != 2 {
		t.Errorf("two data versions gave %d hashes", len(templates))
	}
	t.Logf("3 versions of the data, 1 relabelling: Deployment generations 1 → %d, one per data change", third.Generation)
}

func deploymentOf(w *testapi.Widget, hash string) *appsv1.Deployment {
	labels := map[string]string{"app": w.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{track.HashAnnotation: hash}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.Spec.Message}}}}}}},
			},
		},
	}
}
