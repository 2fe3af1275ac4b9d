package bench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/bare"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/classic"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// atOf returns the name of the At that controls the Pod (both controllers
// set a controller reference), or "" for a Pod nobody controls.
func atOf(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "At" {
		return ref.Name
	}
	return ""
}

// kind selects one of the controllers under test.
type kind string

const (
	// classicAt is the naive controller: the floor of a controller that
	// records nothing.
	classicAt kind = "classic"
	// handwrittenAt records what the library's At records, written by hand
	// on controller-runtime alone: the like-for-like baseline.
	handwrittenAt kind = "hand-written"
	// libraryAt is the At operator as it ships (freshness guards its reads).
	libraryAt kind = "reconcilekit"
	// upstreamGuardAt is the At operator on controller-runtime's own
	// read-your-own-writes client (--read-your-writes=controller-runtime).
	upstreamGuardAt kind = "reconcilekit-upstream-guard"
	// bareAt is the At on client-go alone, sending the same writes with no
	// cache of objects: the floor of the memory comparison (issue 38).
	bareAt kind = "bare"
	// libraryNoDietAt is the At operator caching every object whole
	// (--cache-diet=false): what the diet saves (issue 38).
	libraryNoDietAt kind = "reconcilekit-no-diet"
	// libraryTracedAt is the At operator tracing (issue 49): the SDK
	// sampling every span, into an exporter in memory that counts and
	// drops them (see tracingOverlay).
	libraryTracedAt kind = "reconcilekit-traced"
)

// heading is the controller's name in the report.
func (k kind) heading() string {
	switch k {
	case classicAt:
		return "naive (classic)"
	case upstreamGuardAt:
		return "reconcilekit on controller-runtime's guard"
	case bareAt:
		return "bare client-go"
	case libraryNoDietAt:
		return "reconcilekit without the diet"
	case libraryTracedAt:
		return "reconcilekit traced"
	}
	return string(k)
}

// controllerName is the name under which controller-runtime counts the
// controller's reconciles.
func (k kind) controllerName() string {
	switch k {
	case classicAt:
		return classic.Name
	case handwrittenAt:
		return handwritten.Name
	case bareAt:
		return bare.Name
	}
	return "at"
}

// managerMu serialises the managers of this package: reconcile counts come
// from controller-runtime's process-wide metrics, by controller name.
var managerMu sync.Mutex

// planeMu serialises the two scenarios that load a control plane of their
// own hardest: the sharded audit proof (both gates at once) and the API
// server restarts. Each runs beside the smoke and the tests that run
// managers in this process, not beside the other: each kube-apiserver
// start of the restarts takes seconds of CPU at once, and the proof counts
// its hand-overs in the replicas' balancing rounds, which a starved
// machine makes irregular (a CI run with the machine overloaded saw rounds
// every 1.5 s at the median instead of 0.5 s, and a released range taken
// in 3 rounds where 2 are allowed).
var planeMu sync.Mutex

// lockPlane holds planeMu until the test ends.
func lockPlane(tb testing.TB) {
	planeMu.Lock()
	tb.Cleanup(planeMu.Unlock)
}

// lockManagers holds managerMu until the test or benchmark ends. The tests
// that call it run in parallel with the scenarios that have a control plane
// of their own (see parallelTests), and one at a time among themselves.
func lockManagers(tb testing.TB) {
	managerMu.Lock()
	tb.Cleanup(managerMu.Unlock)
}

// wiring is how a controller's clients are wrapped.
type wiring struct {
	// counter counts every request of the controller's client.
	counter *reconciletest.Counter
	// faults, when set, fails some writes of the controller's client.
	faults *reconciletest.FaultInjector
	// readFaults, when set, fails some reads of the library controller's
	// API reader (its uncached reads).
	readFaults *reconciletest.FaultInjector
	// apiReads, when set, counts the library controller's uncached reads
	// (its APIReader); the classic controller makes none.
	apiReads *reconciletest.Counter
	// creates records the Pods the API server accepted.
	creates *createLog
	// lostResponses, when set, loses the response of that fraction of
	// successful Pod creates: the Pod exists, the controller sees a timeout.
	lostResponses *lossyCreates
}

// running is a controller running under its own manager.
type running struct {
	stop func()
}

// startController runs one controller under a new manager whose cache sees
// only namespace ns. A panic in a reconcile is not recovered: it crashes
// the test binary instead of hiding in a log.
func startController(tb testing.TB, k kind, ns string, w wiring) *running {
	tb.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{
			SkipNameValidation: ptr.To(true),
			RecoverPanic:       ptr.To(false),
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	var c client.WithWatch = withWatch{mgr.GetClient()}
	if w.creates != nil {
		c = w.creates.wrap(c)
	}
	if w.lostResponses != nil {
		c = w.lostResponses.wrap(c)
	}
	if w.faults != nil {
		c = w.faults.Wrap(c)
	}
	if w.counter != nil {
		c = w.counter.Wrap(c)
	}
	switch k {
	case bareAt:
		return startBare(tb, ns)
	case classicAt:
		err = (&classic.Reconciler{Client: c, Scheme: mgr.GetScheme()}).SetupWithManager(mgr)
	case handwrittenAt:
		err = (&handwritten.Reconciler{Client: c, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(handwritten.Name)}).SetupWithManager(mgr)
	default:
		var reader client.Reader = mgr.GetAPIReader()
		if w.readFaults != nil || w.apiReads != nil {
			api, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
			if err != nil {
				tb.Fatal(err)
			}
			if w.readFaults != nil {
				api = w.readFaults.Wrap(api)
			}
			if w.apiReads != nil {
				api = w.apiReads.Wrap(api)
			}
			reader = api
		}
		err = controller.SetupWithManager(mgr, controller.Options{Client: c, APIReader: reader})
	}
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	r := &running{}
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("manager of the %s controller: %v", k, err)
			}
		})
	}
	tb.Cleanup(r.stop)
	return r
}

// withWatch lets a manager's client go through interceptor.NewClient; the
// controllers never watch through it.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("bench: watch through a controller's client")
}

// createLog records when the API server accepted each Pod, by the At that
// controls it.
type createLog struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

func (l *createLog) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if pod, ok := obj.(*corev1.Pod); ok && err == nil {
				now := time.Now()
				l.mu.Lock()
				if l.times == nil {
					l.times = map[string][]time.Time{}
				}
				l.times[atOf(pod)] = append(l.times[atOf(pod)], now)
				l.mu.Unlock()
			}
			return err
		},
	})
}

// byAt returns a copy of the creation times by At name.
func (l *createLog) byAt() map[string][]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]time.Time, len(l.times))
	for k, v := range l.times {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

// lossyCreates makes some successful Pod creates look failed to the
// caller, as when a response is lost after the server stored the object:
// the controller must find the Pod instead of creating a second one.
type lossyCreates struct {
	mu   sync.Mutex
	next func() float64
	rate float64
	lost atomic.Int64
}

func (l *lossyCreates) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if _, ok := obj.(*corev1.Pod); !ok || err != nil {
				return err
			}
			l.mu.Lock()
			lose := l.next() < l.rate
			l.mu.Unlock()
			if lose {
				l.lost.Add(1)
				return apierrors.NewTimeoutError("bench: response lost after the pod was stored", 1)
			}
			return nil
		},
	})
}

// reconciles returns how many reconciles controller-runtime has counted for
// the named controller in this process.
func reconciles(tb testing.TB, name string) float64 {
	tb.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "controller") == name {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// watchLoop lists and then watches the objects of list in namespace ns
// until ctx ends, calling handle for each object seen (listed, added or
// modified) and for deletions with deleted=true. It re-lists when a watch
// ends.
func watchLoop(ctx context.Context, c client.WithWatch, ns string, list client.ObjectList, handle func(obj client.Object, deleted bool)) {
	for ctx.Err() == nil {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		items, err := metaItems(l)
		if err != nil {
			panic(err) // a programming error in the harness
		}
		for _, o := range items {
			handle(o, false)
		}
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue // a watch error: re-list
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				handle(obj, false)
			case watch.Deleted:
				handle(obj, true)
			}
		}
		w.Stop()
	}
}

func metaItems(l client.ObjectList) ([]client.Object, error) {
	switch l := l.(type) {
	case *corev1.PodList:
		out := make([]client.Object, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, nil
	case *atv1.AtList:
		out := make([]client.Object, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, nil
	}
	return nil, fmt.Errorf("bench: cannot list %T", l)
}

// kubelet completes the Pods of one namespace as a kubelet would once their
// command exits: status.phase Succeeded with a terminated container status.
// It also counts every distinct Pod it ever sees per At, so that a second
// Pod for an At is caught even if it is deleted again.
type kubelet struct {
	c client.Client
	// delay is how long a Pod "runs" before it completes.
	delay time.Duration

	// stop stops it; it is safe to call more than once.
	stop func()

	mu    sync.Mutex
	held  map[string]bool               // At names whose Pods are not completed
	pods  map[string]map[types.UID]bool // At name -> Pods seen
	names map[string]string             // Pod name -> At name
	busy  map[types.UID]bool            // Pods being completed
	work  chan seenPod
}

// seenPod is a Pod to complete and when the kubelet first saw it.
type seenPod struct {
	pod  *corev1.Pod
	seen time.Time
}

// startKubelet runs a kubelet for namespace ns of the package's control
// plane until the test ends.
func startKubelet(tb testing.TB, ns string, delay time.Duration) *kubelet {
	tb.Helper()
	return startKubeletOn(tb, env.Client(tb), ns, delay)
}

// startKubeletOn runs a kubelet for namespace ns, reading and writing
// through wc, until its stop is called or the test ends.
func startKubeletOn(tb testing.TB, wc client.WithWatch, ns string, delay time.Duration) *kubelet {
	tb.Helper()
	k := &kubelet{c: wc, delay: delay, held: map[string]bool{}, pods: map[string]map[types.UID]bool{},
		names: map[string]string{}, busy: map[types.UID]bool{}, work: make(chan seenPod, 1<<16)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { k.worker(ctx) })
	}
	wg.Go(func() {
		watchLoop(ctx, wc, ns, &corev1.PodList{}, func(obj client.Object, deleted bool) {
			pod := obj.(*corev1.Pod)
			k.observe(pod, deleted)
		})
	})
	var once sync.Once
	k.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	tb.Cleanup(k.stop)
	return k
}

func (k *kubelet) observe(pod *corev1.Pod, deleted bool) {
	at := atOf(pod)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pods[at] == nil {
		k.pods[at] = map[types.UID]bool{}
	}
	k.pods[at][pod.UID] = true
	k.names[pod.Name] = at
	if deleted || pod.DeletionTimestamp != nil || podtest.Finished(pod) || k.busy[pod.UID] || k.held[at] {
		return
	}
	k.busy[pod.UID] = true
	k.work <- seenPod{pod: pod, seen: time.Now()}
}

func (k *kubelet) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-k.work:
			pod := w.pod
			if wait := time.Until(w.seen.Add(k.delay)); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			podtest.Complete(ctx, k.c, pod)
			k.mu.Lock()
			delete(k.busy, pod.UID)
			k.mu.Unlock()
		}
	}
}

// hold stops the kubelet from completing the Pods of the At; release lets
// it complete them.
func (k *kubelet) hold(at string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.held[at] = true
}

func (k *kubelet) release(ctx context.Context, ns, at string) {
	k.mu.Lock()
	delete(k.held, at)
	k.mu.Unlock()
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
		for i := range pods.Items {
			if atOf(&pods.Items[i]) == at {
				k.observe(&pods.Items[i], false)
			}
		}
	}
}

// atOfPod returns the At that controls the named Pod, as the kubelet saw
// it, or "".
func (k *kubelet) atOfPod(name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.names[name]
}

// podsSeen returns how many distinct Pods the kubelet has seen per At.
func (k *kubelet) podsSeen() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for at, uids := range k.pods {
		out[at] = len(uids)
	}
	return out
}

// tracker records when each At of a namespace was first seen DONE and when
// it was last seen, from a watch.
type tracker struct {
	c  client.Client
	ns string
	// stop stops it; it is safe to call more than once.
	stop func()

	mu      sync.Mutex
	done    map[string]time.Time
	present map[string]bool
}

func startTracker(tb testing.TB, ns string) *tracker {
	tb.Helper()
	return startTrackerOn(tb, env.Client(tb), ns)
}

// startTrackerOn tracks the Ats of namespace ns through wc until its stop
// is called or the test ends.
func startTrackerOn(tb testing.TB, wc client.WithWatch, ns string) *tracker {
	tb.Helper()
	tr := &tracker{c: wc, ns: ns, done: map[string]time.Time{}, present: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		watchLoop(ctx, wc, ns, &atv1.AtList{}, func(obj client.Object, deleted bool) {
			at := obj.(*atv1.At)
			now := time.Now()
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.present[at.Name] = !deleted
			if at.Status.Phase == atv1.PhaseDone {
				if _, ok := tr.done[at.Name]; !ok {
					tr.done[at.Name] = now
				}
			}
		})
	})
	var once sync.Once
	tr.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	tb.Cleanup(tr.stop)
	return tr
}

// waitDone waits until n Ats are DONE and returns when the last became
// DONE.
func (tr *tracker) waitDone(tb testing.TB, n int, timeout time.Duration) time.Time {
	tb.Helper()
	last, _, err := tr.doneWithin(n, timeout)
	if err != nil {
		tb.Fatal(err)
	}
	return last
}

// doneWithin waits until n Ats are DONE and returns when the last became
// DONE; after timeout, it returns how many were DONE and an error that
// lists the Ats and Pods of the namespace.
func (tr *tracker) doneWithin(n int, timeout time.Duration) (last time.Time, done int, err error) {
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if len(tr.done) < n {
			return false, nil
		}
		for _, t := range tr.done {
			if t.After(last) {
				last = t
			}
		}
		return true, nil
	})
	tr.mu.Lock()
	done = len(tr.done)
	tr.mu.Unlock()
	if err != nil {
		return last, done, fmt.Errorf("%d of %d Ats DONE after %s\n%s", done, n, timeout, tr.describe())
	}
	return last, done, nil
}

// describe lists the Ats and Pods of the tracker's namespace, for a test
// that failed.
func (tr *tracker) describe() string {
	var b strings.Builder
	ctx := context.Background()
	var ats atv1.AtList
	if err := tr.c.List(ctx, &ats, client.InNamespace(tr.ns)); err != nil {
		return err.Error()
	}
	for _, at := range ats.Items {
		fmt.Fprintf(&b, "At %s: phase=%q pod=%q finalizers=%v generation=%d deleting=%v conditions=%v\n", at.Name, at.Status.Phase,
			at.Status.PodName, at.Finalizers, at.Generation, at.DeletionTimestamp != nil, at.Status.Conditions)
	}
	var pods corev1.PodList
	if err := tr.c.List(ctx, &pods, client.InNamespace(tr.ns)); err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "Pod %s: at=%s phase=%q deleting=%v\n", p.Name, atOf(&p), p.Status.Phase, p.DeletionTimestamp != nil)
	}
	return b.String()
}

// waitGone waits until no At is present.
func (tr *tracker) waitGone(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	left := 0
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		left = 0
		for _, p := range tr.present {
			if p {
				left++
			}
		}
		return left == 0, nil
	})
	if err != nil {
		tb.Fatalf("%d Ats still present after %s\n%s", left, timeout, tr.describe())
	}
}

func newAt(ns, name string, schedule time.Time) *atv1.At {
	return &atv1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       atv1.AtSpec{Schedule: schedule.UTC().Format(time.RFC3339Nano), Command: "echo hello"},
	}
}

// createAll creates the Ats with a few concurrent clients, unpaced.
func createAll(tb testing.TB, c client.Client, ats []*atv1.At) {
	tb.Helper()
	createPaced(tb, c, ats, 0)
}

// deleteAll deletes the Ats of namespace ns.
func deleteAll(tb testing.TB, c client.Client, ns string) {
	tb.Helper()
	if err := c.DeleteAllOf(context.Background(), &atv1.At{}, client.InNamespace(ns)); err != nil {
		tb.Fatal(err)
	}
}
