package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// The examples use only the public API, and built-in types so that they
// need no CRD. env is the package's control plane, started in TestMain
// with testenv.Main; in a test, env.Namespace(t) and mgr.Run(t) replace
// the namespace and start-up code below.

// greeter makes sure a ConfigMap carries the annotation
// example.com/greeting=hello, patching only when it is missing, and records
// an event when it patches (when it has a recorder).
type greeter struct {
	client.Client
	events events.EventRecorder
}

func (g *greeter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := g.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Annotations["example.com/greeting"] == "hello" {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "example.com/greeting", "hello")
	if err := g.Patch(ctx, &cm, patch); err != nil {
		return reconcile.Result{}, err
	}
	if g.events != nil {
		g.events.Eventf(&cm, nil, corev1.EventTypeNormal, "Greeted", "Greet", "said hello")
	}
	return reconcile.Result{}, nil
}

// exampleNamespace creates a namespace of its own for an example.
func exampleNamespace(ctx context.Context, c client.Client) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// startManager starts mgr until the returned stop is called; mgr.Run(t)
// does this in a test.
func startManager(mgr *testenv.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("manager:", err)
		}
	}()
	return func() { cancel(); <-done }
}

// A controller under a real manager converges, then a resync reconciles
// the converged ConfigMap again and costs no request that writes: the
// proof every operator should have.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns, err := exampleNamespace(ctx, c)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The controller, under a manager that resyncs every second.
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, SyncPeriod: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(mgr.Reconciler(&greeter{Client: mgr.GetClient()}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer startManager(mgr)()

	// Converge.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	if err := c.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	greeted := func() bool { return cm.Annotations["example.com/greeting"] == "hello" }
	if err := mgr.WaitConverged(ctx, cm, "greeted", greeted); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("greeting:", cm.Annotations["example.com/greeting"])
	key := client.ObjectKeyFromObject(cm)
	// The controller's own patch wakes it once more. WaitConverged may
	// return before that reconcile starts (it was queued, not running):
	// wait for it rather than count too early.
	if err := mgr.Reconciles.Wait(ctx, key, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reconciles to converge, at least 2 (the create, then the controller's own patch):", mgr.Reconciles.Count(key) >= 2)

	// A resync: every request of the manager is counted from here.
	mgr.Requests.Reset()
	before := mgr.Reconciles.Count(key)
	if err := mgr.Reconciles.Wait(ctx, key, before+1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reconciled again by the resync:", mgr.Reconciles.Count(key) > before)
	fmt.Println("writes over the resync:", mgr.Requests.Writes())
	// Output:
	// greeting: hello
	// reconciles to converge, at least 2 (the create, then the controller's own patch): true
	// reconciled again by the resync: true
	// writes over the resync: []
}

// Manager.Requests sees every client of the manager: the controller's
// patch through the manager's client and the event recorder's write, which
// a counter around the controller's client alone would miss.
func ExampleManager_requests() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns, err := exampleNamespace(ctx, c)
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := &greeter{Client: mgr.GetClient(), events: mgr.GetEventRecorder("greeter")}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(mgr.Reconciler(r)); err != nil {
		fmt.Println(err)
		return
	}
	defer startManager(mgr)()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	if err := c.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	// The recorder sends events in the background: wait for its write.
	err = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return mgr.Requests.CountResource(reconciletest.VerbCreate, "events.events.k8s.io") > 0, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range mgr.Requests.Writes() {
		fmt.Printf("%s %s %d\n", w.Verb, w.Resource, w.Code)
	}
	// Output:
	// patch configmaps 200
	// create events.events.k8s.io 201
}

// A wait that gives up says what it waited for and shows the object as
// last seen.
func ExampleEnv_WaitFor() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns, err := exampleNamespace(ctx, c)
	if err != nil {
		fmt.Println(err)
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}

	// No controller runs: the annotation never comes.
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	err = env.WaitFor(short, cm, "greeted", func() bool { return cm.Annotations["example.com/greeting"] == "hello" })

	var we *testenv.WaitError
	fmt.Println(errors.As(err, &we), errors.Is(err, context.DeadlineExceeded))
	fmt.Println(strings.Replace(we.What, ns, "<ns>", 1))
	fmt.Println(strings.Contains(we.Last, "kind: ConfigMap"), strings.Contains(we.Last, "k: v"))
	// Output:
	// true true
	// ConfigMap "<ns>/cfg" to be greeted
	// true true
}

// With a CacheDelay on a fake clock, the manager's cache stays behind the
// API server until the test steps the clock: a cached read right after an
// update is stale, for certain.
func ExampleManagerOptions_cacheDelay() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns, err := exampleNamespace(ctx, c)
	if err != nil {
		fmt.Println(err)
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"v": "1"}}
	if err := c.Create(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}

	clk := testingclock.NewFakeClock(time.Now())
	delay := &reconciletest.CacheDelay{Delay: time.Minute, Clock: clk}
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, CacheDelay: delay})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer startManager(mgr)()
	cached := &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}
	if err := mgr.WaitConverged(ctx, cached, "cached", func() bool { return cached.Data["v"] == "1" }); err != nil {
		fmt.Println(err)
		return
	}

	cm.Data["v"] = "2"
	if err := c.Update(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	// The cache is stale: the update's watch event is held (or not even
	// arrived). Wait until it is held, so that the clock's step releases it.
	_ = wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		return delay.Holds(cm), nil
	})
	_ = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), cached)
	fmt.Println("cached right after the update:", cached.Data["v"])

	clk.Step(time.Minute)
	if err := mgr.WaitConverged(ctx, cached, "updated", func() bool { return cached.Data["v"] == "2" }); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cached after the delay:", cached.Data["v"])
	// Output:
	// cached right after the update: 1
	// cached after the delay: 2
}
