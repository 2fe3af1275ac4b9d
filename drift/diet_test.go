package drift_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/drift"
	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// cachedClient returns a client that reads from a cache of namespace ns
// built with opts (writes go to the API server) and waits for its own
// writes to reach that cache, as a manager's client guarded by freshness
// does; and the cache, started.
func cachedClient(t *testing.T, ns string, opts cache.Options) (client.Client, cache.Cache) {
	t.Helper()
	env.Require(t)
	opts.Scheme = env.Scheme
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	cl, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: c, Unstructured: true}})
	if err != nil {
		t.Fatal(err)
	}
	return (&freshness.Tracker{Informers: c}).Wrap(cl), c
}

// dietOptions is a cache on the diet, with the tests' field owner.
func dietOptions(t *testing.T) cache.Options {
	t.Helper()
	opts, err := diet.CacheOptions(cache.Options{}, testOwner)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestEnsureRemovalsConvergeThroughACacheOnTheDiet runs every removal of
// TestEnsureRemovesWhatItWroteBefore (a renamed container port, a removed
// env var, a Service port, a custom resource's list element and map entry)
// with the Writer reading from a cache whose managedFields are on the diet,
// as a manager's client reads: each removal is one write, what another
// manager added survives, and then nothing more is written.
func TestEnsureRemovalsConvergeThroughACacheOnTheDiet(t *testing.T) {
	for _, tc := range removalCases {
		for _, f := range forms {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				ns := env.Namespace(t)
				cached, _ := cachedClient(t, ns, dietOptions(t))
				var counter reconciletest.Counter
				c := counter.Wrap(cached)
				other := env.Client(t)
				writes := func() int { return len(counter.Writes()) }

				if out := f.ensure(t, c, tc.before(ns)); out.Operation != drift.OperationCreated {
					t.Fatalf("first: %q, want created", out.Operation)
				}
				asOther(t, other, tc.before(ns), tc.other)
				// The other writer's change reaches the cache (the
				// informer of the form Ensure reads).
				seen := tc.before(ns)
				if f.unstructured {
					seen = unstructuredOf(t, seen)
				}
				waitCached(t, c, other, seen)
				if out := f.ensure(t, c, tc.before(ns)); out.Operation != drift.OperationUnchanged || writes() != 1 {
					t.Fatalf("after the other writer: %q with %d writes in all; want unchanged:\n%s", out.Operation, writes(), out.Drift.Report)
				}
				out := f.ensure(t, c, tc.after(ns))
				if out.Operation != drift.OperationUpdated || writes() != 2 {
					t.Fatalf("the change: %q with %d writes in all, want updated by exactly one write:\n%s", out.Operation, writes(), out.Drift.Report)
				}
				removed := tc.removed
				if f.unstructured {
					removed = tc.removedUnstructured
				}
				if removed != "" && !slices.Contains(out.Drift.Paths, removed) {
					t.Errorf("drift paths %q, want them to name the removal %s", out.Drift.Paths, removed)
				}
				live := tc.after(ns)
				if err := other.Get(t.Context(), client.ObjectKeyFromObject(live), live); err != nil {
					t.Fatal(err)
				}
				tc.check(t, live, f)
				for i := range 3 {
					if out := f.ensure(t, c, tc.after(ns)); out.Operation != drift.OperationUnchanged {
						t.Fatalf("reconcile %d after converging: %q, want unchanged:\n%s", i+1, out.Operation, out.Drift.Report)
					}
				}
				if writes() != 2 {
					t.Errorf("%d writes in all, want 2: the create and the change", writes())
				}
			})
		}
	}
}

// waitCached waits until the cached client reads obj at the resourceVersion
// the API server has.
func waitCached(t *testing.T, cached, direct client.Client, obj client.Object) {
	t.Helper()
	want := obj.DeepCopyObject().(client.Object)
	if err := direct.Get(t.Context(), client.ObjectKeyFromObject(obj), want); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got := obj.DeepCopyObject().(client.Object)
		return cached.Get(ctx, client.ObjectKeyFromObject(obj), got) == nil && got.GetResourceVersion() == want.GetResourceVersion(), nil
	})
	if err != nil {
		t.Fatalf("the cache never caught up with resourceVersion %s", want.GetResourceVersion())
	}
}

// transformOf is one cache transform a test holds against what Ensure
// reads.
type transformOf struct {
	name string
	opts func(t *testing.T) cache.Options
}

// onlyOurs drops every managedFields entry but the field owner's: too
// much, since Diff reads another manager's entry on the same field.
func onlyOurs(in any) (any, error) {
	if obj, ok := in.(metav1.Object); ok {
		var kept []metav1.ManagedFieldsEntry
		for _, e := range obj.GetManagedFields() {
			if e.Manager == testOwner {
				kept = append(kept, e)
			}
		}
		obj.SetManagedFields(kept)
	}
	return in, nil
}

var (
	onTheDiet = transformOf{"on the diet", dietOptions}
	stripped  = transformOf{"every entry stripped", func(*testing.T) cache.Options {
		return cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	}}
	oursOnly   = transformOf{"only the field owner's entries", func(*testing.T) cache.Options { return cache.Options{DefaultTransform: onlyOurs} }}
	wholeCache = transformOf{"whole", func(*testing.T) cache.Options { return cache.Options{} }}
)

// TestATransformThatDropsWhatEnsureReadsFailsItsRemovals is the other side
// of the diet's test: through a cache whose transform drops what Ensure
// reads, the same scenarios go wrong, and these checks see it. A renamed
// port is only removed when the cache keeps the field owner's entry (all
// stripped, the old port stays next to the new one); a label another
// manager set too is left only when the cache keeps that manager's entry
// (with the field owner's alone, Ensure removes it from under the other
// manager). The diet and a whole cache get both right.
func TestATransformThatDropsWhatEnsureReadsFailsItsRemovals(t *testing.T) {
	tests := []struct {
		transform transformOf
		// portRemoved: the renamed port's old number is gone;
		// sharedLabelKept: the label the other manager applied too stays.
		portRemoved, sharedLabelKept bool
	}{
		{wholeCache, true, true},
		{onTheDiet, true, true},
		{stripped, false, true},
		{oursOnly, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.transform.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			c, _ := cachedClient(t, ns, tc.transform.opts(t))
			other := env.Client(t)
			w := drift.NewWriter(c, testOwner)

			// A renamed port.
			if _, err := w.Ensure(t.Context(), deploymentIn(ns)); err != nil {
				t.Fatal(err)
			}
			renamed := deploymentIn(ns)
			webContainer(renamed.(*appsv1.Deployment)).Ports[0].ContainerPort = 9090
			waitCached(t, c, other, deploymentIn(ns))
			if _, err := w.Ensure(t.Context(), renamed); err != nil {
				t.Logf("the renamed port: %v", err) // the server refuses the duplicate name when the old port stays
			}
			live := deploymentIn(ns)
			if err := other.Get(t.Context(), client.ObjectKeyFromObject(live), live); err != nil {
				t.Fatal(err)
			}
			var ports []string
			for _, p := range webContainer(live.(*appsv1.Deployment)).Ports {
				ports = append(ports, strconv.Itoa(int(p.ContainerPort)))
			}
			if removed := !slices.Contains(ports, "8080"); removed != tc.portRemoved {
				t.Errorf("web ports %v: old port removed %v, want %v", ports, removed, tc.portRemoved)
			}

			// A label the field owner and another manager both set.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Labels: map[string]string{"team": "a", "app": "web"}}}
			if _, err := w.Ensure(t.Context(), cm.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			apply := applycorev1.ConfigMap("shared", ns).WithLabels(map[string]string{"team": "a"})
			if err := other.Apply(t.Context(), apply, client.FieldOwner("other"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			waitCached(t, c, other, cm.DeepCopy())
			withoutTeam := cm.DeepCopy()
			delete(withoutTeam.Labels, "team")
			if _, err := w.Ensure(t.Context(), withoutTeam); err != nil {
				t.Fatal(err)
			}
			got := &corev1.ConfigMap{}
			if err := other.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
				t.Fatal(err)
			}
			if _, kept := got.Labels["team"]; kept != tc.sharedLabelKept {
				t.Errorf("labels %v: the shared label kept %v, want %v", got.Labels, kept, tc.sharedLabelKept)
			}
		})
	}
}

// TestEnsureReadsAPartWholeFromItsAPIReader: through a cache that keeps
// ConfigMaps in part (diet.Fields), Ensure of an existing ConfigMap reads
// it whole from the Writer's APIReader and writes nothing when nothing
// drifted, and refuses it, permanently and without writing, when it has no
// APIReader; a missing one is still created from the cache's answer.
func TestEnsureReadsAPartWholeFromItsAPIReader(t *testing.T) {
	ns := env.Namespace(t)
	part, err := diet.Fields(&corev1.ConfigMap{}, "immutable")
	if err != nil {
		t.Fatal(err)
	}
	cached, cc := cachedClient(t, ns, cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Transform: part}}})
	var counter reconciletest.Counter
	c := counter.Wrap(cached)
	direct := env.Client(t)

	w := drift.NewWriter(c, testOwner)
	out, err := w.Ensure(t.Context(), configMapIn(ns))
	if err != nil || out.Operation != drift.OperationCreated {
		t.Fatalf("create: %q, %v", out.Operation, err)
	}
	waitCached(t, cached, direct, configMapIn(ns))
	inCache := &corev1.ConfigMap{}
	if err := cc.Get(t.Context(), client.ObjectKeyFromObject(configMapIn(ns)), inCache); err != nil {
		t.Fatal(err)
	}
	if !diet.IsPartial(inCache) || len(inCache.Data) != 0 {
		t.Fatalf("the cache holds %v, want a part without data", inCache)
	}

	_, err = w.Ensure(t.Context(), configMapIn(ns))
	if class, _ := rkerrors.Classify(err); !errors.Is(err, diet.ErrPartial) || class != rkerrors.ClassPermanent {
		t.Errorf("without an APIReader: %v, want diet.ErrPartial, permanent", err)
	}
	w.APIReader = direct
	desired := configMapIn(ns)
	out, err = w.Ensure(t.Context(), desired)
	if err != nil || out.Operation != drift.OperationUnchanged {
		t.Fatalf("with an APIReader: %q, %v; want unchanged:\n%s", out.Operation, err, out.Drift.Report)
	}
	if diet.IsPartial(desired.(*corev1.ConfigMap)) || desired.(*corev1.ConfigMap).Data["mode"] != "prod" {
		t.Errorf("desired holds %v, want the whole live object", desired)
	}
	if n := len(counter.Writes()); n != 1 {
		t.Errorf("%d writes, want 1: the create", n)
	}
}

// TestEnsureNeverChangesTheCachedObject: Ensure reads the cache's own
// object, without a copy; whatever the caller then does to what Ensure
// left in desired, and whatever Ensure writes, the cache's object stays as
// the informer stored it. Run with -race: Ensure's readers and the
// caller's writes run beside a reader of the cache.
func TestEnsureNeverChangesTheCachedObject(t *testing.T) {
	ns := env.Namespace(t)
	c, cc := cachedClient(t, ns, dietOptions(t))
	direct := env.Client(t)
	w := drift.NewWriter(c, testOwner)
	if _, err := w.Ensure(t.Context(), deploymentIn(ns)); err != nil {
		t.Fatal(err)
	}
	waitCached(t, c, direct, deploymentIn(ns))
	stored := func() client.Object {
		// The cache's own object: its maps and lists are those the
		// informer stores.
		obj := &appsv1.Deployment{}
		if err := cc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, obj, client.UnsafeDisableDeepCopy); err != nil {
			t.Errorf("the cache lacks the Deployment: %v", err)
		}
		return obj
	}
	before := stored().DeepCopyObject()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // another reader of the cache, all along
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = stored().DeepCopyObject()
		}
	})
	for range 3 {
		desired := deploymentIn(ns)
		out, err := w.Ensure(t.Context(), desired)
		if err != nil || out.Operation != drift.OperationUnchanged {
			t.Fatalf("%q, %v; want unchanged", out.Operation, err)
		}
		d := desired.(*appsv1.Deployment)
		d.Labels["mutated"] = "by the caller"
		d.Spec.Template.Spec.Containers[0].Image = "mutated"
		d.ManagedFields[0].Manager = "mutated"
	}
	close(stop)
	wg.Wait()
	if diff := cmp.Diff(before, stored()); diff != "" {
		t.Errorf("the cache's object changed (-before +after):\n%s", diff)
	}
}

// TestEnsureThroughTheDietLeavesAForeignSecretAlone is issue 36's foreign
// Secret read through a cache on the diet: none of its managedFields entries
// is the Writer's, and the diet must still say somebody else wrote it (an
// empty list would read as "cannot tell", and Ensure would write over it),
// whether the desired Secret is linked to its owner or controlled by it.
func TestEnsureThroughTheDietLeavesAForeignSecretAlone(t *testing.T) {
	for _, owned := range []bool{false, true} {
		t.Run(map[bool]string{false: "linked", true: "controlled"}[owned], func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			cached, _ := cachedClient(t, ns, dietOptions(t))
			var counter reconciletest.Counter
			c := counter.Wrap(cached)
			other := env.Client(t)
			ctx := t.Context()
			owner := widgetIn(ns)
			if err := other.Create(ctx, owner); err != nil {
				t.Fatal(err)
			}
			foreign := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-credentials"},
				Data:       map[string][]byte{"password": []byte("the payments team's own")},
			}
			if err := other.Create(ctx, foreign, client.FieldOwner("kubectl-create")); err != nil {
				t.Fatal(err)
			}
			waitCached(t, c, other, foreign)
			var seen corev1.Secret
			if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &seen); err != nil {
				t.Fatal(err)
			}
			if len(seen.ManagedFields) == 0 {
				t.Errorf("the diet left the foreign Secret no managedFields: who wrote it is lost")
			}
			desired := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-credentials"},
				Data:       map[string][]byte{"password": []byte("mirrored")},
			}
			var opts []drift.Option
			if owned {
				opts = append(opts, drift.Owner(owner))
			} else if err := ownership.SetLink(owner, desired, c.Scheme()); err != nil {
				t.Fatal(err)
			}
			_, err := drift.NewWriter(c, testOwner).Ensure(ctx, desired, opts...)
			var fe *drift.ForeignError
			if !errors.As(err, &fe) {
				t.Errorf("Ensure onto a Secret somebody else created, read through the diet: %v; want a *drift.ForeignError", err)
			}
			if n := len(counter.Writes()); n != 0 {
				t.Errorf("Ensure sent %d writes to a Secret that is not ours: %v", n, counter.Writes())
			}
			var after corev1.Secret
			if err := other.Get(ctx, client.ObjectKeyFromObject(foreign), &after); err != nil {
				t.Fatal(err)
			}
			if string(after.Data["password"]) != "the payments team's own" || len(after.OwnerReferences) != 0 {
				t.Errorf("the foreign Secret changed: data %q, owners %v", after.Data, after.OwnerReferences)
			}
		})
	}
}

// TestEnsureHandsBackTheCachedObjectWithItsKind: Ensure reads the cache's
// own object, which carries no apiVersion and kind (a cached read with a
// copy sets them); the copy it hands the caller when nothing drifted has
// them, as before it read without a copy.
func TestEnsureHandsBackTheCachedObjectWithItsKind(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c, _ := cachedClient(t, ns, cache.Options{})
	w := drift.NewWriter(c, testOwner)
	desired := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kind"}, Data: map[string]string{"k": "v"}}
	}
	if _, err := w.Ensure(t.Context(), desired()); err != nil {
		t.Fatal(err)
	}
	waitCached(t, c, env.Client(t), desired())
	got := desired()
	out, err := w.Ensure(t.Context(), got)
	if err != nil || out.Operation != drift.OperationUnchanged {
		t.Fatalf("second Ensure: %q, %v; want unchanged", out.Operation, err)
	}
	if gvk := got.GetObjectKind().GroupVersionKind(); gvk != corev1.SchemeGroupVersion.WithKind("ConfigMap") {
		t.Errorf("desired after an unchanged Ensure has kind %v, want v1 ConfigMap", gvk)
	}
}
