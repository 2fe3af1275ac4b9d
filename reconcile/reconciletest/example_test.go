package reconciletest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// exampleT stands in for the *testing.T a test would pass: an Example has
// none, so this one prints what Converge reports.
type exampleT struct{ testing.TB }

func (exampleT) Helper()                  {}
func (exampleT) Context() context.Context { return context.Background() }
func (exampleT) Logf(string, ...any)      {}
func (exampleT) Errorf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
}
func (exampleT) Fatalf(format string, args ...any) {
	fmt.Printf("FATAL: "+format+"\n", args...)
}

// greeter makes sure a ConfigMap carries the annotation
// example.com/greeting=hello. With countSyncs it also stamps how many times
// it ran: the classic bug that makes a reconciler write forever.
type greeter struct {
	client.Client
	countSyncs bool
	syncs      int
}

func (g *greeter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := g.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	changed := cm.Annotations["example.com/greeting"] != "hello"
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "example.com/greeting", "hello")
	if g.countSyncs {
		g.syncs++
		metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "example.com/syncs", strconv.Itoa(g.syncs))
		changed = true
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, g.Patch(ctx, &cm, patch)
}

// Converge proves a reconciler idempotent: in a test, pass t instead of
// exampleT{}. The correct greeter converges with one write; the one that
// stamps a sync counter is caught, with the patch it keeps sending.
func ExampleConverge() {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}

	for _, countSyncs := range []bool{false, true} {
		var counter reconciletest.Counter
		c := counter.Wrap(fake.NewClientBuilder().WithObjects(cm.DeepCopy()).Build())
		r := &greeter{Client: c, countSyncs: countSyncs}

		rep := reconciletest.Converge(exampleT{}, r, req, reconciletest.WithCounter(&counter))
		fmt.Printf("converged after %d run(s) with writes %v\n", rep.Runs, rep.Writes())
	}
	// Output:
	// converged after 1 run(s) with writes [patch ConfigMap "default/cfg"]
	// FAIL: reconciletest: "default/cfg" is not idempotent: it converged after 1 run(s), then the next run found work to do:
	// - it wrote 1 time(s):
	//   1. patch ConfigMap "default/cfg"
	//      application/merge-patch+json patch: {"metadata":{"annotations":{"example.com/syncs":"2"}}}
	// converged after 1 run(s) with writes [patch ConfigMap "default/cfg"]
}

// waiter does nothing until its clock reaches at, and asks to be requeued
// exactly then.
type waiter struct {
	clock clock.PassiveClock
	at    time.Time
}

func (w *waiter) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	if now := w.clock.Now(); now.Before(w.at) {
		return reconcile.Result{RequeueAfter: w.at.Sub(now)}, nil
	}
	return reconcile.Result{}, nil
}

// StepClock lets Converge step the fake clock the reconciler reads, so a
// reconciler that waits for a time converges without sleeping.
func ExampleStepClock() {
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	r := &waiter{clock: clk, at: start.Add(90 * time.Minute)}

	rep := reconciletest.Converge(exampleT{}, r, reconcile.Request{},
		reconciletest.WithCounter(&reconciletest.Counter{}), reconciletest.StepClock(clk))
	fmt.Println("runs:", rep.Runs)
	fmt.Println("clock:", clk.Now().Format(time.Kitchen))
	// Output:
	// runs: 2
	// clock: 10:30AM
}

// A Counter records requests by verb and kind.
func ExampleCounter() {
	var counter reconciletest.Counter
	c := counter.Wrap(fake.NewClientBuilder().Build())
	ctx := context.Background()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}
	_ = c.Create(ctx, cm)
	_ = c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	_ = c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"))

	fmt.Print(counter.String())
	fmt.Println("creates:", counter.Count(reconciletest.VerbCreate, "ConfigMap"))
	fmt.Println("writes:", counter.Writes())
	// Output:
	// create ConfigMap: 1
	// get ConfigMap: 1
	// list ConfigMap: 1
	// creates: 1
	// writes: [create ConfigMap "default/cfg"]
}

// A Sequence makes chosen requests fail, here the first and third update,
// the way a busy API server would.
func ExampleSequence() {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}
	faults, err := reconciletest.NewFaultInjector(1,
		reconciletest.Sequence(reconciletest.FaultConflict, reconciletest.FaultNone, reconciletest.FaultThrottle),
		reconciletest.OnlyVerbs(reconciletest.VerbUpdate))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := faults.Wrap(fake.NewClientBuilder().WithObjects(cm).Build())

	for i := 1; i <= 4; i++ {
		var got corev1.ConfigMap
		_ = c.Get(context.Background(), client.ObjectKeyFromObject(cm), &got)
		fmt.Printf("update %d: %v\n", i, c.Update(context.Background(), &got))
	}
	fmt.Println("injected:", len(faults.Injected()))
	// Output:
	// update 1: Operation cannot be fulfilled on configmaps "cfg": injected by reconciletest
	// update 2: <nil>
	// update 3: injected by reconciletest
	// update 4: <nil>
	// injected: 2
}

// Rate makes a fraction of requests fail, the same ones for the same seed.
func ExampleRate() {
	faults, err := reconciletest.NewFaultInjector(42, reconciletest.Rate(0.25, reconciletest.FaultServerError))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := faults.Wrap(fake.NewClientBuilder().Build())
	for range 1000 {
		_ = c.List(context.Background(), &corev1.ConfigMapList{})
	}
	fmt.Printf("%d of %d requests failed\n", len(faults.Injected()), faults.Matched())

	_, err = reconciletest.NewFaultInjector(42, reconciletest.Rate(1.5))
	fmt.Println(err)
	// Output:
	// 256 of 1000 requests failed
	// reconciletest: invalid fault option: rate 1.5 is not between 0 and 1
}

// WrapConfig counts every request of every client made from a config at
// the transport: here two clientsets, one for ConfigMaps and one for
// events; a manager's cache, client, API reader, event recorder and leader
// election are counted the same way when the manager is made from the
// wrapped config.
func ExampleCounter_WrapConfig() {
	// A stand-in API server that accepts everything.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		fmt.Fprint(w, `{"metadata":{"name":"cfg","namespace":"default"}}`)
	}))
	defer srv.Close()

	var counter reconciletest.Counter
	cfg := counter.WrapConfig(&rest.Config{Host: srv.URL})
	ctx := context.Background()

	configMaps := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
	cm, _ := configMaps.Get(ctx, "cfg", metav1.GetOptions{})
	_, _ = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	events := eventsv1client.NewForConfigOrDie(cfg).Events("default")
	_, _ = events.Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})

	fmt.Print(counter.String())
	for _, r := range counter.Writes() {
		fmt.Println(r.Method, r.Path, r.Code)
	}
	// Output:
	// create events.events.k8s.io: 1
	// get configmaps: 1
	// update configmaps: 1
	// PUT /api/v1/namespaces/default/configmaps/cfg 200
	// POST /apis/events.k8s.io/v1/namespaces/default/events 201
}

// A CacheDelay holds every watch event back; with a fake clock, a test
// decides when the cache catches up.
func ExampleCacheDelay() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	delay := &reconciletest.CacheDelay{Delay: time.Minute, Clock: clk}
	server := watch.NewFake() // stands for the API server's watch
	lw := delay.ListerWatcher(&toolscache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.ConfigMapList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return server, nil },
	})
	w, _ := lw.Watch(metav1.ListOptions{})
	defer w.Stop()

	server.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", ResourceVersion: "2"}})
	// The event is on its way in; wait until the delay holds it.
	_ = wait.PollUntilContextTimeout(context.Background(), time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return delay.Pending() == 1, nil })
	fmt.Println("held:", delay.Pending())
	clk.Step(time.Minute)
	ev := <-w.ResultChan()
	fmt.Println("delivered:", ev.Type, ev.Object.(*corev1.ConfigMap).ResourceVersion)
	// Output:
	// held: 1
	// delivered: MODIFIED 2
}

// A ReconcileCounter counts runs per object; under a manager, wrap the
// reconciler given to the controller builder.
func ExampleReconcileCounter() {
	var runs reconciletest.ReconcileCounter
	r := runs.Wrap(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	a := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "default", Name: "a"}}
	b := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "default", Name: "b"}}
	for _, req := range []reconcile.Request{a, b, a} {
		_, _ = r.Reconcile(context.Background(), req)
	}
	fmt.Println("a:", runs.Count(a.NamespacedName), "b:", runs.Count(b.NamespacedName), "total:", runs.Total())
	// Output:
	// a: 2 b: 1 total: 3
}
