package testenv_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/procs"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	// An Example cannot skip itself: without binaries outside CI, skip the
	// examples (they need the API server) as Main skips the tests.
	if _, err := testenv.FindAssets(); err != nil && os.Getenv("CI") == "" {
		_ = flag.Set("test.skip", "^Example")
	}
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{testapiCRDs},
		AddToScheme:       []func(*runtime.Scheme) error{testapi.AddToScheme},
		// The package's own tests start and stop planes of their own and
		// look at the processes: only the child of
		// TestMainAttachesASharedPackageToAServedPlane shares one.
		Shared: sharedChild,
	})
}

// WidgetReconciler is the package doc's reconciler: it marks a Widget
// Ready at its generation, writing the status only when it changes.
type WidgetReconciler struct {
	client.Client
}

func (r *WidgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := w.DeepCopy()
	w.Status.ObservedGeneration = w.Generation
	changed := meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: w.Generation,
	})
	if !changed && before.Status.ObservedGeneration == w.Generation {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.Status().Patch(ctx, &w, client.MergeFrom(before))
}

// TestPackageDocExample is the package doc's complete test, with Widget
// standing for the user's type.
func TestPackageDocExample(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &WidgetReconciler{Client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Complete(mgr.Reconciler(r)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)

	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client(t).Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	ready := func() bool { return testenv.HasCondition(w, "Ready", metav1.ConditionTrue) }
	if err := mgr.WaitConverged(ctx, w, "Ready", ready); err != nil {
		t.Fatal(err)
	}

	// Converged: the next resync reconciles again and writes nothing.
	mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(w)
	if err := mgr.Reconciles.Wait(ctx, key, mgr.Reconciles.Count(key)+1); err != nil {
		t.Fatal(err)
	}
	if writes := mgr.Requests.Writes(); len(writes) > 0 {
		t.Errorf("a resync of a converged Widget wrote %v", writes)
	}
}

// writeEveryTime is WidgetReconciler with the classic bug: it stamps the
// time of each run on the status, so it writes on every reconcile.
type writeEveryTime struct {
	client.Client
	runs int
}

func (r *writeEveryTime) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if _, err := (&WidgetReconciler{Client: r.Client}).Reconcile(ctx, req); err != nil {
		return reconcile.Result{}, err
	}
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := w.DeepCopy()
	r.runs++
	w.Status.Phase = "run-" + time.Now().Format(time.RFC3339Nano)
	return reconcile.Result{}, r.Status().Patch(ctx, &w, client.MergeFrom(before))
}

// TestPackageDocExampleCatchesAWriteOnResync: the same test fails for a
// reconciler that writes on every run, naming the write.
func TestPackageDocExampleCatchesAWriteOnResync(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Complete(mgr.Reconciler(&writeEveryTime{Client: mgr.GetClient()})); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client(t).Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	ready := func() bool { return testenv.HasCondition(w, "Ready", metav1.ConditionTrue) }
	if err := mgr.WaitConverged(ctx, w, "Ready", ready); err != nil {
		t.Fatal(err)
	}
	mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(w)
	if err := mgr.Reconciles.Wait(ctx, key, mgr.Reconciles.Count(key)+1); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, wr := range mgr.Requests.Writes() {
		if wr.Verb == "patch/status" && wr.Resource.String() == "widgets.testing.reconcilekit.io" && wr.Name == "w" {
			found = true
		}
	}
	if !found {
		t.Errorf("writes over a resync = %v, want the status patch every run sends", mgr.Requests.Writes())
	}
}

// eventingReconciler reads its Widget through the cache and the API
// reader, writes its status and records an event: one request from each of
// the manager's clients.
type eventingReconciler struct {
	mgr *testenv.Manager
}

func (r *eventingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var fresh testapi.Widget
	if err := r.mgr.GetAPIReader().Get(ctx, req.NamespacedName, &fresh); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var w testapi.Widget
	if err := r.mgr.GetClient().Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if w.Status.Phase == "Seen" {
		return reconcile.Result{}, nil
	}
	before := w.DeepCopy()
	w.Status.Phase = "Seen"
	if err := r.mgr.GetClient().Status().Patch(ctx, &w, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, err
	}
	r.mgr.GetEventRecorder("testenv-test").Eventf(&w, nil, "Normal", "Seen", "Reconcile", "widget seen")
	return reconcile.Result{}, nil
}

// TestManagerCountsEveryClient: the manager's Requests see the cache's
// watch, the API reader's get, the client's status patch, the event
// recorder's create and leader election's lease, each with its resource,
// status code and user agent; the test's own client is not counted.
func TestManagerCountsEveryClient(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, LeaderElection: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Complete(mgr.Reconciler(&eventingReconciler{mgr: mgr})); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := env.Client(t).Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitFor(ctx, w, "phase Seen", func() bool { return w.Status.Phase == "Seen" }); err != nil {
		t.Fatal(err)
	}

	// Every expected request shows up; events and lease renewals are sent
	// in the background, so wait for them.
	const widgets, events, leases = "widgets.testing.reconcilekit.io", "events.events.k8s.io", "leases.coordination.k8s.io"
	want := []struct {
		verb     string
		resource string
		agent    string
	}{
		{"watch", widgets, ""},
		{"get", widgets, ""},
		{"patch/status", widgets, ""},
		{"create", events, ""},
		{"create", leases, "leader-election"},
		{"update", leases, "leader-election"},
	}
	seen := func(verb, resource, agent string) bool {
		for _, r := range mgr.Requests.Requests() {
			if string(r.Verb) == verb && r.Resource.String() == resource && strings.Contains(r.UserAgent, agent) &&
				r.Code >= 200 && r.Code < 300 && r.Namespace == ns {
				return true
			}
		}
		return false
	}
	for _, x := range want {
		done := func() bool { return seen(x.verb, x.resource, x.agent) }
		if err := poll(ctx, done); err != nil {
			t.Errorf("no successful %s of %s in %q with user agent containing %q among:\n%s", x.verb, x.resource, ns, x.agent, mgr.Requests)
		}
	}
	if n := mgr.Requests.CountResource("create", widgets); n != 0 {
		t.Errorf("the test's own create was counted %d time(s) with the manager's requests", n)
	}
	for _, r := range mgr.Requests.Requests() {
		if r.UserAgent == "" || r.Method == "" {
			t.Errorf("request without user agent or method: %+v", r)
		}
	}
	if got := mgr.Reconciles.Count(client.ObjectKeyFromObject(w)); got < 1 {
		t.Errorf("reconciles of the widget = %d, want at least 1", got)
	}
}

// poll checks cond until it holds or ctx ends (bounded by the test's
// default wait).
func poll(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, testenv.DefaultWaitTimeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// TestManagersInParallelSeeOnlyTheirNamespace: parallel tests each run the
// same controller in their own namespace; each manager reconciles only its
// own objects.
func TestManagersInParallelSeeOnlyTheirNamespace(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a", "b", "c"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, ns := t.Context(), env.Namespace(t)
			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Complete(mgr.Reconciler(&WidgetReconciler{Client: mgr.GetClient()})); err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := env.Client(t).Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			if err := env.WaitForCondition(ctx, w, "Ready", metav1.ConditionTrue); err != nil {
				t.Fatal(err)
			}
			for key := range mgr.Reconciles.Counts() {
				if key.Namespace != ns {
					t.Errorf("reconciled %s, outside the test's namespace %s", key, ns)
				}
			}
		})
	}
}

// TestWaitForSaysWhatItWaitedForAndWhatItSaw: a wait that times out names
// the object and the condition, and shows the object as last seen, or
// that it was never found.
func TestWaitForSaysWhatItWaitedForAndWhatItSaw(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c := env.Client(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "hello"}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		obj     *testapi.Widget
		wait    func(ctx context.Context, obj *testapi.Widget) error
		want    []string
		notWant []string
	}{
		{
			name: "condition never met",
			obj:  &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}},
			wait: func(ctx context.Context, obj *testapi.Widget) error {
				return env.WaitForCondition(ctx, obj, "Ready", metav1.ConditionTrue)
			},
			want:    []string{`waiting for Widget "` + ns + `/w" to be condition Ready=True`, "last seen:", "message: hello", "kind: Widget", "replicas: 1"},
			notWant: []string{"managedFields"},
		},
		{
			name: "object missing",
			obj:  &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing"}},
			wait: func(ctx context.Context, obj *testapi.Widget) error {
				return env.WaitFor(ctx, obj, "phase Done", func() bool { return obj.Status.Phase == "Done" })
			},
			want: []string{`waiting for Widget "` + ns + `/missing" to be phase Done`, "(not found)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			err := tt.wait(ctx, tt.obj)
			var we *testenv.WaitError
			if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a *WaitError wrapping context.DeadlineExceeded", err)
			}
			for _, part := range tt.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error lacks %q:\n%v", part, err)
				}
			}
			for _, part := range tt.notWant {
				if strings.Contains(err.Error(), part) {
					t.Errorf("error has %q:\n%v", part, err)
				}
			}
		})
	}
}

// TestWaitGoneWaitsUntilTheObjectIsGone: WaitFor's condition never runs
// on an absent object, so a deleted one never meets it; WaitGone returns
// once the object is gone, not while a finalizer holds it (its error shows
// the finalizer), and takes an object created again under the same name
// for another one when it knows the first one's UID.
func TestWaitGoneWaitsUntilTheObjectIsGone(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	c := env.Client(t)
	const finalizer = "example.com/hold"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{finalizer}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}

	err := env.WaitGone(short(), cm.DeepCopy())
	var we *testenv.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held by a finalizer: err = %v, want a *WaitError wrapping context.DeadlineExceeded", err)
	}
	for _, part := range []string{`waiting for ConfigMap "` + ns + `/held" to be gone`, "deletionTimestamp:", finalizer} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error lacks %q:\n%v", part, err)
		}
	}

	patch := client.MergeFrom(cm.DeepCopy())
	cm.Finalizers = nil
	if err := c.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitGone(ctx, cm.DeepCopy()); err != nil {
		t.Fatalf("with its finalizer removed: %v", err)
	}
	ran := false
	err = env.WaitFor(short(), cm.DeepCopy(), "anything", func() bool { ran = true; return true })
	if !errors.Is(err, context.DeadlineExceeded) || ran || !strings.Contains(err.Error(), "(not found)") {
		t.Errorf("WaitFor on a deleted object: err = %v, condition ran: %v; want a timeout showing it not found, the condition never run", err, ran)
	}

	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitGone(ctx, cm.DeepCopy()); err != nil {
		t.Errorf("the first object (its UID known), with another created under its name: %v", err)
	}
	byName := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}
	if err := env.WaitGone(short(), byName); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an object of that name exists, no UID given: err = %v, want a timeout", err)
	}
}

// TestWaitForConditionNeedsTheCurrentGeneration: a condition observed at an
// older generation does not count; once observed at the current one, the
// wait returns.
func TestWaitForConditionNeedsTheCurrentGeneration(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	c := env.Client(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	setReady := func(gen int64) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Ready", Status: "True", Reason: "R", ObservedGeneration: gen})
		if err := c.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	setReady(1)
	w.Spec.Message = "new" // generation 2
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := env.WaitForCondition(short, w.DeepCopy(), "Ready", metav1.ConditionTrue); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready observed at generation 1 of 2: err = %v, want a timeout", err)
	}
	setReady(2)
	if err := env.WaitForCondition(ctx, w.DeepCopy(), "Ready", metav1.ConditionTrue); err != nil {
		t.Fatalf("Ready observed at generation 2: %v", err)
	}
}

// TestCountingClient: the counting client sums requests by verb, and a
// snapshot starts again from zero.
func TestCountingClient(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	c, reqs := env.CountingClient(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	before := w.DeepCopy()
	w.Status.Phase = "x"
	if err := c.Status().Patch(ctx, w, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "get": 1, "patch/status": 1}, reqs.Snapshot()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if diff := cmp.Diff(map[string]int{"delete": 1, "get": 1}, reqs.Counts()); diff != "" {
		t.Errorf("counts after the snapshot (-want +got):\n%s", diff)
	}
}

// TestManagerWithCacheDelayReadsStale: ManagerOptions.CacheDelay reaches
// the manager's cache: while the delay holds the update, the cached
// client reads the object before it.
func TestManagerWithCacheDelayReadsStale(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	c := env.Client(t)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "v1"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	delay := &reconciletest.CacheDelay{Delay: time.Hour, Clock: clk}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	cached := &testapi.Widget{}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(w), cached); err != nil || cached.Spec.Message != "v1" {
		t.Fatalf("first cached read: %q, %v; want v1", cached.Spec.Message, err)
	}
	w.Spec.Message = "v2"
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, func() bool { return delay.Holds(w) }); err != nil {
		t.Fatalf("the update's event was not held (pending %d): %v", delay.Pending(), err)
	}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(w), cached); err != nil || cached.Spec.Message != "v1" {
		t.Fatalf("cached read while the delay holds the update: %q, %v; want the stale v1", cached.Spec.Message, err)
	}
	clk.Step(time.Hour)
	if err := mgr.WaitConverged(ctx, cached, "message v2", func() bool { return cached.Spec.Message == "v2" }); err != nil {
		t.Fatal(err)
	}
}

// TestNewManagerRefusesAnInvalidCacheDelay: a CacheDelay that fails its
// Validate fails NewManager, instead of a cache that never syncs.
func TestNewManagerRefusesAnInvalidCacheDelay(t *testing.T) {
	t.Parallel()
	_, err := env.NewManager(testenv.ManagerOptions{Namespace: env.Namespace(t), CacheDelay: &reconciletest.CacheDelay{Delay: -time.Second}})
	if !errors.Is(err, reconciletest.ErrInvalidCacheDelay) {
		t.Errorf("NewManager = %v, want ErrInvalidCacheDelay", err)
	}
}

// TestMainWithoutBinaries runs this package's tests again in a process
// whose KUBEBUILDER_ASSETS lacks the binaries: outside CI the tests that
// need the API server skip with the advice; in CI the run fails with it.
func TestMainWithoutBinaries(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		t.Skip("already the child process")
	}
	t.Parallel()
	tests := []struct {
		name     string
		ci       string
		wantExit bool
		want     []string
	}{
		{"outside CI", "", false, []string{"--- SKIP: TestRequiresAPIServer", "go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets"}},
		{"in CI", "true", true, []string{"FAIL: testenv: no kube-apiserver/etcd binaries", "KUBEBUILDER_ASSETS="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRequiresAPIServer$", "-test.v")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "TESTENV_CHILD=1", "KUBEBUILDER_ASSETS="+t.TempDir())
			if tt.ci != "" {
				cmd.Env = append(cmd.Env, "CI="+tt.ci)
			}
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantExit {
				t.Errorf("exit error = %v, want failure %v; output:\n%s", err, tt.wantExit, out)
			}
			for _, part := range tt.want {
				if !strings.Contains(string(out), part) {
					t.Errorf("output lacks %q:\n%s", part, out)
				}
			}
		})
	}
}

// TestRequiresAPIServer is run by TestMainWithoutBinaries in a child
// process without binaries.
func TestRequiresAPIServer(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "" {
		t.Skip("run by TestMainWithoutBinaries")
	}
	env.Require(t)
	t.Error("Require let a test run without a control plane")
}

// TestStartWithoutBinaries: Start reports missing binaries with ErrNoAssets.
func TestStartWithoutBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := testenv.Start(testenv.Options{})
	if !errors.Is(err, testenv.ErrNoAssets) {
		t.Fatalf("err = %v, want ErrNoAssets", err)
	}
	if !strings.Contains(err.Error(), "lacks kube-apiserver or etcd") {
		t.Errorf("error does not say what KUBEBUILDER_ASSETS lacks: %v", err)
	}
	var zero testenv.Env
	if _, err := zero.NewManager(testenv.ManagerOptions{}); err == nil {
		t.Error("NewManager on a zero Env: no error")
	}
	if err := zero.WaitFor(t.Context(), &testapi.Widget{}, "x", func() bool { return true }); err == nil {
		t.Error("WaitFor on a zero Env: no error")
	}
}

// TestStartStopsWhatItStartedWhenItFails: envtest installs CRDs after it
// has started kube-apiserver and etcd, and returns that error with both
// running. Start stops them: before, each such failure left a control
// plane running after the test process ended (seen as six stray planes
// slowing a later make test). Not parallel: it counts this process's
// children, which the parallel tests would add to.
func TestStartStopsWhatItStartedWhenItFails(t *testing.T) {
	env.Require(t) // the binaries are there
	before := planeChildren(t)
	_, err := testenv.Start(testenv.Options{CRDDirectoryPaths: []string{filepath.Join(t.TempDir(), "missing")}})
	if err == nil {
		t.Fatal("Start with a CRD directory that does not exist: no error")
	}
	for pid, comm := range planeChildren(t) {
		if _, ok := before[pid]; !ok {
			t.Errorf("%s (pid %d) still runs after Start failed with %v", comm, pid, err)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// planeChildren returns this process's running children that are
// kube-apiserver or etcd, by process ID.
func planeChildren(t *testing.T) map[int]string {
	t.Helper()
	kids, err := procs.Children("kube-apiserver", "etcd")
	if err != nil {
		t.Skipf("no /proc to find child processes in: %v", err)
	}
	return kids
}

// TestRealAPIServerRoundTrip proves the harness talks to a real
// kube-apiserver: the server applies the CRD's defaults, serves the status
// subresource separately from the main resource, bumps resourceVersion on
// every write, and deletes.
func TestRealAPIServerRoundTrip(t *testing.T) {
	t.Parallel()
	c := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)

	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testapi.WidgetSpec{Message: "hello"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}

	var got testapi.Widget
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %v, want the CRD default 1 applied by the server", got.Spec.Replicas)
	}
	if got.Generation != 1 || got.UID == "" {
		t.Errorf("generation=%d uid=%q, want 1 and a server-assigned UID", got.Generation, got.UID)
	}

	// A status patch changes status only, and does not bump generation.
	before := got.DeepCopy()
	got.Status.Phase = "Running"
	got.Spec.Replicas = ptr.To[int32](5) // ignored by the status subresource
	if err := c.Status().Patch(ctx, &got, client.MergeFrom(before)); err != nil {
		t.Fatalf("status patch: %v", err)
	}
	var after testapi.Widget
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &after); err != nil {
		t.Fatalf("get after status patch: %v", err)
	}
	if after.Status.Phase != "Running" {
		t.Errorf("status.phase = %q, want Running", after.Status.Phase)
	}
	if *after.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %d after a status patch, want 1: the status subresource must not write spec", *after.Spec.Replicas)
	}
	if after.Generation != 1 {
		t.Errorf("generation = %d after a status-only write, want 1", after.Generation)
	}
	if after.ResourceVersion == before.ResourceVersion {
		t.Errorf("resourceVersion unchanged after a write")
	}

	if err := c.Delete(ctx, &after); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &after); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: err = %v, want NotFound", err)
	}
}

// gadgetCRD is a CRD built in Go, of a kind no CRD file of the package
// installs: Gadget, in group example.com, any fields.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// TestStartWithCRDsInGo: Start runs a control plane of its own, with CRDs
// given as Go values, and Stop ends it.
func TestStartWithCRDsInGo(t *testing.T) {
	env.Require(t) // the binaries are there
	t.Parallel()
	crd := gadgetCRD()
	own, err := testenv.Start(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = own.Stop()
		}
	}()
	if own.Config.Host == env.Config.Host {
		t.Fatalf("Start returned the package's control plane %s, want a new one", own.Config.Host)
	}
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("example.com/v1")
	g.SetKind("Gadget")
	g.SetNamespace("default")
	g.SetName("g")
	if err := own.Client(t).Create(t.Context(), g); err != nil {
		t.Fatalf("create a Gadget: %v", err)
	}
	if err := own.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := own.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if err := own.WaitFor(t.Context(), g, "anything", func() bool { return true }); err == nil {
		t.Error("WaitFor on a stopped Env: no error")
	}
}

// TestKubeconfigInParallelTests: parallel tests each ask for a kubeconfig
// at once; envtest's certificate authority numbers its certificates
// without a lock, so Env serialises them (the race detector caught two
// parallel subtests of package health doing this). Each kubeconfig works.
func TestKubeconfigInParallelTests(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			path := env.Kubeconfig(t)
			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(cfg, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.List(t.Context(), &corev1.NamespaceList{}); err != nil {
				t.Errorf("a list with kubeconfig %d: %v", i, err)
			}
		})
	}
}

// TestConfigAsksForUncompressedResponses: a large response (the OpenAPI
// document, megabytes) comes to Env.Config's clients as it is, where a
// client that accepts gzip gets it compressed by the API server, which
// costs both sides CPU over loopback.
func TestConfigAsksForUncompressedResponses(t *testing.T) {
	env.Require(t)
	t.Parallel()
	gzipped := func(cfg *rest.Config) bool {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/openapi/v2")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || n < 256<<10 {
			t.Fatalf("GET /openapi/v2: %s, %d bytes, %v; want 200 and a document large enough to compress", resp.Status, n, err)
		}
		// The transport that asked for gzip decompressed it.
		return resp.Uncompressed || resp.Header.Get("Content-Encoding") != ""
	}
	if gzipped(env.Config) {
		t.Error("Env.Config's client got a compressed response")
	}
	accepting := rest.CopyConfig(env.Config)
	accepting.DisableCompression = false
	if !gzipped(accepting) {
		t.Error("a client that accepts gzip got the document uncompressed: the check above proves nothing")
	}
}
