// Package guidetest runs every step of the embedding guide
// (docs/embedding.md) the same way: its controller under a real manager on
// envtest, in namespaces of its own, through the same scenario (a Website
// converges, a converged resync is measured, the spec changes, the Website
// is deleted; a Website with a bad hostname fails). Each step's tests and
// the guide's table use it. It is test plumbing: only _test files import
// it.
package guidetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webv1 "github.com/reconcilekit/reconcilekit/examples/embedding/api/v1"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// CRDs returns what every test package of the guide passes to
// testenv.Main: the Website CRD at path (relative to the test package) and
// the Website types, on a control plane that runs the controllers of a
// cluster (kube-controller-manager, and kwok as a kubelet), so that a
// Website's Deployment rolls out as it would in one. The guide's tests keep
// to their namespaces, so its packages share such a plane when one is
// served (testenv.Options.Shared; make test serves one).
func CRDs(path string) testenv.Options {
	return testenv.Options{
		CRDDirectoryPaths: []string{path},
		AddToScheme:       []func(*runtime.Scheme) error{webv1.AddToScheme},
		ControllerManager: true,
		Kwok:              true,
		Shared:            true,
	}
}

// Wire registers one step's controller with mgr, its reconciler wrapped
// by wrap, the DNS records going to the directory namespace.
type Wire func(mgr ctrl.Manager, directory string, wrap func(reconcile.Reconciler) reconcile.Reconciler) error

// Step is one step of the guide as the harness runs it.
type Step struct {
	// Package is the step's package, under examples/embedding.
	Package string
	// Adopts names what the step adopts, for the guide's table.
	Adopts string
	// Wire registers the step's controller.
	Wire Wire
	// RecordsEvents says that the step records an event when a Website
	// becomes Ready; measurements wait for it to reach the API server.
	RecordsEvents bool
}

// Fixture is one step's controller running against its own namespace and
// DNS directory.
type Fixture struct {
	Env                  *testenv.Env
	Manager              *testenv.Manager
	Namespace, Directory string
	// Client reads from and writes to the API server directly; its
	// requests are not the controller's and are not counted.
	Client client.Client

	step    Step
	mu      sync.Mutex
	results map[types.NamespacedName][]Result
}

// Result is what one reconcile returned.
type Result struct {
	Result reconcile.Result
	Err    error
}

// Start runs step's controller under a manager (resyncing every second)
// until the test ends.
func Start(t *testing.T, env *testenv.Env, step Step) *Fixture {
	t.Helper()
	return start(t, env, step, nil)
}

// StartLagging is [Start] with a manager whose cache lags: every watch
// event reaches it delay.Delay late, so the controller's reconciles
// (a resync's among them) read Websites older than its own writes.
func StartLagging(t *testing.T, env *testenv.Env, step Step, delay *reconciletest.CacheDelay) *Fixture {
	t.Helper()
	return start(t, env, step, delay)
}

func start(t *testing.T, env *testenv.Env, step Step, delay *reconciletest.CacheDelay) *Fixture {
	t.Helper()
	env.Require(t)
	f := &Fixture{Env: env, Namespace: env.Namespace(t), Directory: env.Namespace(t), Client: env.Client(t),
		step: step, results: map[types.NamespacedName][]Result{}}
	mgr, err := env.NewManager(testenv.ManagerOptions{
		SyncPeriod: time.Second,
		CacheDelay: delay,
		Options: manager.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{
			f.Namespace: {}, f.Directory: {},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Manager = mgr
	wrap := func(r reconcile.Reconciler) reconcile.Reconciler {
		return mgr.Reconciler(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			res, err := r.Reconcile(ctx, req)
			f.mu.Lock()
			f.results[req.NamespacedName] = append(f.results[req.NamespacedName], Result{Result: res, Err: err})
			f.mu.Unlock()
			return res, err
		}))
	}
	if err := step.Wire(mgr, f.Directory, wrap); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	return f
}

// LastError returns the error of the last reconcile of the Website.
func (f *Fixture) LastError(site *webv1.Website) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.results[client.ObjectKeyFromObject(site)]
	if len(rs) == 0 {
		return nil
	}
	return rs[len(rs)-1].Err
}

// Results returns what each reconcile of the Website returned, in order.
func (f *Fixture) Results(site *webv1.Website) []Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.results[client.ObjectKeyFromObject(site)])
}

// resultLines lists what each reconcile of the Website returned, a line each.
func (f *Fixture) resultLines(site *webv1.Website) string {
	var b strings.Builder
	for i, r := range f.Results(site) {
		fmt.Fprintf(&b, "  %d: %+v, error %v\n", i+1, r.Result, r.Err)
	}
	return b.String()
}

// Create creates a Website.
func (f *Fixture) Create(t *testing.T, name, hostname string) *webv1.Website {
	t.Helper()
	site := &webv1.Website{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: name},
		Spec:       webv1.WebsiteSpec{Hostname: hostname},
	}
	if err := f.Client.Create(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	return site
}

// WaitConverged waits until the Website is Ready at its generation, as the
// manager's cache shows it, with no reconcile running; when the step
// records events, also until its Ready event has reached the API server.
func (f *Fixture) WaitConverged(t *testing.T, site *webv1.Website) {
	t.Helper()
	ready := func() bool { return testenv.HasCondition(site, "Ready", metav1.ConditionTrue) }
	if err := f.Manager.WaitConverged(t.Context(), site, "Ready", ready); err != nil {
		t.Fatal(err)
	}
	if !f.step.RecordsEvents {
		return
	}
	err := f.poll(t, func(ctx context.Context) (bool, error) {
		var events eventsv1.EventList
		if err := f.Client.List(ctx, &events, client.InNamespace(site.Namespace)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			// The Ready event itself: an earlier one (Reconciling, while
			// the Deployment rolls out on a loaded machine) may be there
			// while the Ready one still waits in the recorder's queue.
			return e.Regarding.Name == site.Name && e.Regarding.UID == site.UID && e.Action == "Ready"
		}), nil
	})
	if err != nil {
		t.Fatalf("the Ready event of %s never reached the API server: %v", site.Name, err)
	}
}

// Resync is what one reconcile of a converged Website sent to the API
// server.
type Resync struct {
	// Writes are the writes, as "<verb> <resource>", sorted.
	Writes []string
	// Requests counts every request, reads included.
	Requests int
}

// MeasureResync waits for the next reconcile of the converged Website
// (a resync) and returns what it sent. It measures a reconcile only when
// no other reconcile ran at the same time, so the requests are all its.
func (f *Fixture) MeasureResync(t *testing.T, site *webv1.Website) Resync {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	key := client.ObjectKeyFromObject(site)
	reconciles, requests := f.Manager.Reconciles, f.Manager.Requests
	for range 20 {
		n := reconciles.Count(key)
		if reconciles.Running() != 0 {
			if err := reconciles.Wait(ctx, key, n+1); err != nil {
				t.Fatal(err)
			}
			continue
		}
		requests.Reset()
		if reconciles.Running() != 0 || reconciles.Count(key) != n {
			continue // a reconcile began before the reset
		}
		if err := reconciles.Wait(ctx, key, n+1); err != nil {
			t.Fatal(err)
		}
		sent := requests.Requests()
		if reconciles.Running() != 0 || reconciles.Count(key) != n+1 {
			continue // another reconcile began before the read
		}
		r := Resync{Requests: len(sent)}
		for _, req := range sent {
			if req.Verb.IsWrite() {
				r.Writes = append(r.Writes, fmt.Sprintf("%s %s", req.Verb, req.Resource.Resource))
			}
		}
		slices.Sort(r.Writes)
		return r
	}
	t.Fatal("no reconcile of the converged Website ran alone in 20 attempts")
	return Resync{}
}

// Deployment returns the Website's Deployment, read from the API server.
func (f *Fixture) Deployment(t *testing.T, site *webv1.Website) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := f.Client.Get(t.Context(), client.ObjectKeyFromObject(site), d); err != nil {
		t.Fatalf("the Deployment of %s: %v", site.Name, err)
	}
	return d
}

// CheckAvailable checks that the Website's Deployment, read from the API
// server, is Current (rolled out and available at its generation), as a
// Website that reports its children's health says when it is Ready.
func (f *Fixture) CheckAvailable(t *testing.T, site *webv1.Website) {
	t.Helper()
	d := f.Deployment(t, site)
	if h, err := health.Of(d); err != nil || h.Status != health.Current {
		t.Errorf("the Website is Ready while its Deployment is %v (%v)", h, err)
	}
}

// Record returns the Website's DNS record, read from the API server.
func (f *Fixture) Record(t *testing.T, site *webv1.Website) (*corev1.ConfigMap, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := f.Client.Get(t.Context(), client.ObjectKey{Namespace: f.Directory, Name: site.Namespace + "." + site.Name}, cm)
	return cm, err
}

// SetReplicas changes spec.replicas and waits until the Website is Ready
// at its new generation with its Deployment at that many replicas.
func (f *Fixture) SetReplicas(t *testing.T, site *webv1.Website, replicas int32) {
	t.Helper()
	patch := client.MergeFrom(site.DeepCopy())
	site.Spec.Replicas = ptr.To(replicas)
	if err := f.Client.Patch(t.Context(), site, patch); err != nil {
		t.Fatal(err)
	}
	if err := f.Env.WaitForCondition(t.Context(), site, "Ready", metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	if got := f.Deployment(t, site).Spec.Replicas; got == nil || *got != replicas {
		t.Errorf("Deployment replicas = %v, want %d", got, replicas)
	}
}

// Delete deletes the Website and waits until it and its DNS record are
// gone.
func (f *Fixture) Delete(t *testing.T, site *webv1.Website) {
	t.Helper()
	if err := f.Client.Delete(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	err := f.poll(t, func(ctx context.Context) (bool, error) {
		err := f.Client.Get(ctx, client.ObjectKeyFromObject(site), &webv1.Website{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the deleted Website %s never went away: %v", site.Name, err)
	}
	if _, err := f.Record(t, site); !apierrors.IsNotFound(err) {
		t.Errorf("the DNS record of the deleted Website: %v, want NotFound", err)
	}
}

func (f *Fixture) poll(t *testing.T, done func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, done)
}
