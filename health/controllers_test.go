package health_test

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
)

const fieldOwner = "health-test"

// parent reconciles Widgets that own one child each, a Deployment or a Job
// desired makes from the Widget, and reports the child's health on the
// Widget's conditions, as an operator built on reconcile.Loop would: its
// client is guarded by a freshness.Tracker, the one its Loop uses too, so
// the child Ensure leaves is never older than the parent's last write of
// it.
type parent struct {
	client  client.Client
	desired func(*testapi.Widget) client.Object
}

func (p *parent) sync(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
	child := p.desired(w)
	if _, err := drift.NewWriter(p.client, fieldOwner).Ensure(ctx, child, drift.Owner(w)); err != nil {
		return reconcile.Progress{}, err
	}
	h, err := health.OfAll(child)
	if err != nil {
		return reconcile.Progress{}, err
	}
	return reconcile.Progress{Reason: "Deployed", Message: "children ready"}.WithChildren(h), nil
}

// guarded returns mgr's client guarded by a freshness.Tracker that waits
// for mgr's cache, as ctrl.Options{NewClient: tracker.NewClient} builds a
// manager's client.
func guarded(mgr *testenv.Manager) (client.Client, *freshness.Tracker) {
	tracker := &freshness.Tracker{Informers: mgr.GetCache()}
	return tracker.Wrap(mgr.GetClient()), tracker
}

// deployment is a Widget's Deployment: spec.message is its image,
// spec.replicas its replicas, rolled one replica at a time.
func deployment(w *testapi.Widget) *appsv1.Deployment {
	labels := map[string]string{"widget": w.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: w.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: w.Spec.Message}}},
			},
		},
	}
}

// start runs a manager in a namespace of its own with the parent's
// controller: reconcile.Predicate on the Widgets, health.Predicate on the
// children.
func start(t *testing.T, desired func(*testapi.Widget) client.Object, opts testenv.ManagerOptions) (*testenv.Manager, *parent) {
	t.Helper()
	env.Require(t)
	if opts.Namespace == "" {
		opts.Namespace = env.Namespace(t)
	}
	mgr, err := env.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := guarded(mgr)
	p := &parent{client: c, desired: desired}
	loop := reconcile.New(c, fieldOwner, p.sync)
	err = ctrl.NewControllerManagedBy(mgr).
		For(&testapi.Widget{}, builder.WithPredicates(reconcile.Predicate())).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate())).
		Owns(&batchv1.Job{}, builder.WithPredicates(health.Predicate())).
		Complete(mgr.Reconciler(loop))
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return mgr, p
}

func newWidget(ns, name, image string, replicas int32) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: testapi.WidgetSpec{Message: image, Replicas: ptr.To(replicas)}}
}

// recorded is an object as a watch delivered it, in the order of the API
// server's resourceVersions (one etcd: one order for every kind).
type recorded struct {
	rv  uint64
	obj client.Object
}

// recorder keeps every version of the Widgets and Deployments of a
// namespace that the API server stores, from its start on.
type recorder struct {
	mu          sync.Mutex
	widgets     []recorded
	deployments []recorded
}

func record(t *testing.T, ns string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{}
	c := env.Client(t)
	var wg sync.WaitGroup
	for _, list := range []client.ObjectList{&testapi.WidgetList{}, &appsv1.DeploymentList{}} {
		w, err := c.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
					continue
				}
				rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
				r.mu.Lock()
				if _, isWidget := obj.(*testapi.Widget); isWidget {
					r.widgets = append(r.widgets, recorded{rv, obj})
				} else {
					r.deployments = append(r.deployments, recorded{rv, obj})
				}
				r.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

// deploymentAt returns the Deployment as the API server stored it just
// before resourceVersion rv.
func (r *recorder) deploymentAt(rv uint64) (*appsv1.Deployment, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last *appsv1.Deployment
	for _, d := range r.deployments {
		if d.rv < rv {
			last = d.obj.(*appsv1.Deployment)
		}
	}
	return last, last != nil
}

// checkReadyOnlyOnCurrent checks every version of the Widget the recorder
// saw at generation gen: it must say Reconciling before it says Ready,
// and whenever it says Ready for gen, its Deployment, as stored when the
// Ready status was written, must be Current at the generation that spec
// asks for, with image.
func (r *recorder) checkReadyOnlyOnCurrent(t *testing.T, gen int64, image string) (readies int) {
	t.Helper()
	r.mu.Lock()
	widgets := slices.Clone(r.widgets)
	r.mu.Unlock()
	reconciling := false
	for _, rec := range widgets {
		w := rec.obj.(*testapi.Widget)
		if w.Generation != gen {
			continue
		}
		if c, ok := status.FindCondition(w, status.TypeReconciling); ok && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen {
			reconciling = true
		}
		ready, ok := status.FindCondition(w, status.TypeReady)
		if !ok || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != gen {
			continue
		}
		readies++
		if !reconciling {
			t.Errorf("the Widget said Ready at generation %d (resourceVersion %d) without saying Reconciling first", gen, rec.rv)
		}
		d, ok := r.deploymentAt(rec.rv)
		if !ok {
			t.Errorf("the Widget said Ready (resourceVersion %d) before its Deployment existed", rec.rv)
			continue
		}
		h, err := health.Of(d)
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != health.Current || d.Spec.Template.Spec.Containers[0].Image != image {
			t.Errorf("the Widget said Ready (resourceVersion %d) while its Deployment (resourceVersion %s, generation %d, image %s) was %s",
				rec.rv, d.ResourceVersion, d.Generation, d.Spec.Template.Spec.Containers[0].Image, h)
		}
	}
	return readies
}

// TestRolloutKeepsTheParentReconcilingUntilAvailable: a Widget's Deployment
// rolls out a new image on a control plane with kube-controller-manager and
// kwok. The Widget says Reconciling until the Deployment is available at
// the new generation, then Ready, never before (checked on every version
// the API server stored, in resourceVersion order); kubectl wait
// --for=condition=Ready returns only then; and a converged Widget costs no
// write on a resync. It runs with an up-to-date cache, and with one that
// lags each event by 300 ms.
func TestRolloutKeepsTheParentReconcilingUntilAvailable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"cache up to date", 0}, {"cache lagging 300ms", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			opts := testenv.ManagerOptions{Namespace: ns, SyncPeriod: 3 * time.Second}
			if tc.delay > 0 {
				opts.CacheDelay = &reconciletest.CacheDelay{Delay: tc.delay}
			}
			mgr, _ := start(t, func(w *testapi.Widget) client.Object { return deployment(w) }, opts)
			ctx, c := t.Context(), env.Client(t)
			rec := record(t, ns)

			w := newWidget(ns, "web", "nginx:1.27", 3)
			if err := c.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			if err := env.WaitForCondition(ctx, w, status.TypeReady, metav1.ConditionTrue); err != nil {
				t.Fatal(err)
			}
			// The recorder's watch may not have seen yet the version the
			// client's wait did: wait for it, as for generation 2 below.
			if err := env.WaitFor(ctx, w, "the recorder to see Ready at generation 1", func() bool {
				return rec.checkReadyOnlyOnCurrent(t, 1, "nginx:1.27") > 0
			}); err != nil {
				t.Fatal(err)
			}

			// Converged: a resync reconciles the Widget and writes nothing.
			key := client.ObjectKeyFromObject(w)
			if err := mgr.WaitConverged(ctx, w, "Ready", func() bool { return testenv.HasCondition(w, status.TypeReady, metav1.ConditionTrue) }); err != nil {
				t.Fatal(err)
			}
			mgr.Requests.Reset()
			if err := mgr.Reconciles.Wait(ctx, key, mgr.Reconciles.Count(key)+1); err != nil {
				t.Fatal(err)
			}
			if writes := mgr.Requests.Writes(); len(writes) > 0 {
				t.Errorf("a resync of a converged Widget wrote %v", writes)
			}

			// A new image: generation 2 of the Widget.
			mgr.Requests.Reset()
			before := mgr.Reconciles.Count(key)
			w.Spec.Message = "nginx:1.28"
			if err := c.Update(ctx, w); err != nil {
				t.Fatal(err)
			}
			kubectl := exec.CommandContext(ctx, env.Kubectl(t), "--kubeconfig", env.Kubeconfig(t), "-n", ns,
				"wait", "--for=condition=Ready", "--timeout=90s", "widgets.testing.reconcilekit.io/web")
			if out, err := kubectl.CombinedOutput(); err != nil {
				t.Fatalf("kubectl wait: %v\n%s", err, out)
			}
			// kubectl returned: the Widget it saw Ready is one of those
			// recorded, and the Deployment must have been available then.
			d := deployment(w)
			if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				t.Fatal(err)
			}
			if h, _ := health.Of(d); h.Status != health.Current || d.Generation != 2 {
				t.Errorf("kubectl wait returned while the Deployment is %s at generation %d", h, d.Generation)
			}
			if err := env.WaitFor(ctx, w, "the recorder to see Ready", func() bool {
				return rec.checkReadyOnlyOnCurrent(t, 2, "nginx:1.28") > 0
			}); err != nil {
				t.Fatal(err)
			}
			var statusWrites int
			for _, r := range mgr.Requests.Writes() {
				if r.Resource.Resource == "widgets" {
					statusWrites++
				}
			}
			rec.mu.Lock()
			versions := len(rec.deployments) // the watch goes on appending
			rec.mu.Unlock()
			t.Logf("rollout of 3 replicas: %d Widget status writes, %d reconciles, %d Deployment versions stored",
				statusWrites, mgr.Reconciles.Count(key)-before, versions)
		})
	}
}

// TestDeploymentPastItsProgressDeadlineStallsTheParent: a Deployment whose
// Pods no node can take passes its progress deadline; the Widget becomes
// Stalled, with a reason naming the kind and the Deployment's own reason
// and a message naming the Deployment.
func TestDeploymentPastItsProgressDeadlineStallsTheParent(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	start(t, func(w *testapi.Widget) client.Object {
		d := deployment(w)
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](2)
		d.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} // no node has one
		return d
	}, testenv.ManagerOptions{Namespace: ns})
	ctx, c := t.Context(), env.Client(t)
	w := newWidget(ns, "nowhere", "nginx:1.27", 1)
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForCondition(ctx, w, status.TypeStalled, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	stalled, _ := status.FindCondition(w, status.TypeStalled)
	if stalled.Reason != "DeploymentProgressDeadlineExceeded" || !strings.HasPrefix(stalled.Message, "Deployment "+ns+"/nowhere: ") {
		t.Errorf("Stalled = %s: %s", stalled.Reason, stalled.Message)
	}
	if ready, _ := status.FindCondition(w, status.TypeReady); ready.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %s", ready.Status)
	}
}

// TestFailingJobFailsTheParent: a Job whose container exits 1, with no
// retries, fails (BackoffLimitExceeded, set by the real Job controller);
// the Widget becomes Stalled, naming the Job. A Job that succeeds makes
// its Widget Ready only once it is Complete.
func TestFailingJobFailsTheParent(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	start(t, func(w *testapi.Widget) client.Object {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{w.Spec.Message}}}}},
			},
		}
	}, testenv.ManagerOptions{Namespace: ns})
	ctx, c := t.Context(), env.Client(t)

	failing := newWidget(ns, "failing", "false", 1)
	if err := c.Create(ctx, failing); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForCondition(ctx, failing, status.TypeStalled, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	if s, _ := status.FindCondition(failing, status.TypeStalled); s.Reason != "JobBackoffLimitExceeded" || !strings.HasPrefix(s.Message, "Job "+ns+"/failing: ") {
		t.Errorf("Stalled = %s: %s", s.Reason, s.Message)
	}

	succeeding := newWidget(ns, "succeeding", "true", 1)
	if err := c.Create(ctx, succeeding); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForCondition(ctx, succeeding, status.TypeReady, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(succeeding), job); err != nil {
		t.Fatal(err)
	}
	if h, _ := health.Of(job); h.Status != health.Current {
		t.Errorf("the Widget is Ready while its Job is %s", h)
	}
}

// TestALaggingCacheIsNeverTakenForCurrent drives a parent's sync by hand
// over a cache that lags on a fake clock, so that every stale read is
// certain: the Deployment rolls out image A, the parent writes image B
// (generation 2), then goes back to A before its cache has seen the write.
// The cached Deployment, generation 1 with image A, rolled out, matches
// what the parent wants, and its status alone says Current; but the parent
// reads it through its freshness-guarded client, which knows generation 2
// was written: the read waits for the cache, then fails with a
// freshness.StaleError (a conflict: a quiet requeue), and the parent is
// never Ready on that copy. Once the cache catches up, the parent writes A
// again (generation 3) and is Ready only when that is rolled out; the
// Tracker then remembers nothing.
func TestALaggingCacheIsNeverTakenForCurrent(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	clk := testingclock.NewFakeClock(time.Now())
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: &reconciletest.CacheDelay{Delay: time.Minute, Clock: clk}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	ctx, api, cached := t.Context(), env.Client(t), mgr.GetClient()
	c, tracker := guarded(mgr)
	tracker.MaxWait = 500 * time.Millisecond
	p := &parent{client: c, desired: func(w *testapi.Widget) client.Object { return deployment(w) }}

	w := newWidget(ns, "web", "nginx:1.27", 2)
	if err := api.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	sync := func(image string) (reconcile.Progress, error) {
		t.Helper()
		w.Spec.Message = image
		return p.sync(ctx, w)
	}
	mustSync := func(image string) reconcile.Progress {
		t.Helper()
		progress, err := sync(image)
		if err != nil {
			t.Fatal(err)
		}
		return progress
	}
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	// rolledOut waits until the server's Deployment, then the cache's, is
	// Current at generation gen: the fake clock moves only here.
	rolledOut := func(gen int64) {
		t.Helper()
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		if err := env.WaitFor(ctx, d, "rolled out", func() bool {
			h, _ := health.Of(d)
			return h.Status == health.Current && d.Generation == gen
		}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			clk.Step(time.Minute)
			var c appsv1.Deployment
			if err := cached.Get(ctx, key, &c); err != nil {
				return false, nil
			}
			h, _ := health.Of(&c)
			return h.Status == health.Current && c.Generation == gen, nil
		})
		if err != nil {
			t.Fatalf("the cache never had generation %d rolled out", gen)
		}
	}

	if got := mustSync("nginx:1.27"); got.State != reconcile.InProgress {
		t.Fatalf("after creating the Deployment: %+v", got)
	}
	rolledOut(1)
	if got := mustSync("nginx:1.27"); got.State != reconcile.Done {
		t.Fatalf("generation 1 rolled out: %+v", got)
	}

	if got := mustSync("nginx:1.28"); got.State != reconcile.InProgress {
		t.Fatalf("after writing generation 2: %+v", got)
	}
	// Back to 1.27 while the cache still holds generation 1: that copy
	// says Current, and matches what the parent wants.
	var stale appsv1.Deployment
	if err := cached.Get(ctx, key, &stale); err != nil {
		t.Fatal(err)
	}
	if h, _ := health.Of(&stale); stale.Generation != 1 || h.Status != health.Current {
		t.Fatalf("the cache was to hold generation 1, rolled out; it holds generation %d, %s", stale.Generation, h)
	}
	got, err := sync("nginx:1.27")
	if class, _ := errors.Classify(err); !errors.Is(err, freshness.ErrStale) || class != errors.ClassConflict {
		t.Fatalf("with generation 2 written and the cache at 1: %+v, %v (%s); want a freshness.StaleError, class conflict", got, err, class)
	}

	// The cache catches up with generation 2 (1.28): the parent writes 1.27
	// again, generation 3, and is Ready once that is rolled out.
	rolledOut(2)
	if got := mustSync("nginx:1.27"); got.State != reconcile.InProgress {
		t.Fatalf("after writing generation 3: %+v", got)
	}
	rolledOut(3)
	if got := mustSync("nginx:1.27"); got.State != reconcile.Done {
		t.Errorf("generation 3 rolled out: %+v", got)
	}
	if n := tracker.Len(); n != 0 {
		t.Errorf("the freshness Tracker still remembers %d writes", n)
	}
}
