package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/follow"
)

// write is one write of a replica, attributed to an At: accepted, or of
// unknown outcome.
type write struct {
	replica, at, what string
	when              time.Time
	// unknown: the write's context ended while it was in flight (its
	// range was lost, or its Lease went unrenewed past the renew deadline,
	// under it): the server may have applied it, its answer lost.
	unknown bool
}

// writeLog records the writes of every replica that may have been applied.
type writeLog struct {
	mu     sync.Mutex
	writes []write
	// failed are the writes that returned an error, for the failure
	// messages.
	failed []write
}

// wrap records c's accepted writes as replica's: an At's own writes by its
// name, a Pod's create by its At (the Pod's controller).
func (l *writeLog) wrap(replica string, c client.WithWatch) client.WithWatch {
	record := func(obj client.Object, what string) {
		name := obj.GetName()
		if pod, ok := obj.(*corev1.Pod); ok {
			name = ""
			if ref := metav1GetController(pod); ref != "" {
				name = ref
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.writes = append(l.writes, write{replica: replica, at: name, what: what, when: time.Now()})
	}
	fail := func(ctx context.Context, obj client.Object, what string, err error) {
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			record(obj, what)
			l.mu.Lock()
			l.writes[len(l.writes)-1].unknown = true
			l.mu.Unlock()
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.failed = append(l.failed, write{replica: replica, at: obj.GetName(), what: what + ": " + err.Error(), when: time.Now()})
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			fail(ctx, obj, "create", err)
			if err == nil {
				record(obj, "create")
			}
			return err
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, p, opts...)
			fail(ctx, obj, "patch", err)
			if err == nil {
				record(obj, "patch")
			}
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			fail(ctx, obj, "update", err)
			if err == nil {
				record(obj, "update")
			}
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			err := c.SubResource(sub).Patch(ctx, obj, p, opts...)
			fail(ctx, obj, "patch "+sub, err)
			if err == nil {
				record(obj, "patch "+sub)
			}
			return err
		},
	})
}

// mayHaveWritten reports whether accepted, the kinds of the accepted
// writes in order, and unknown, the writes of unknown outcome by kind, can
// be exactly want: accepted is want with some writes left out, each of
// which one of unknown may stand for (a write of unknown outcome never adds
// to the accepted ones).
func mayHaveWritten(accepted []string, unknown map[string]int, want []string) bool {
	missing := map[string]int{}
	i := 0
	for _, w := range want {
		if i < len(accepted) && accepted[i] == w {
			i++
			continue
		}
		missing[w]++
	}
	if i != len(accepted) {
		return false
	}
	for k, n := range missing {
		if unknown[k] < n {
			return false
		}
	}
	return true
}

func metav1GetController(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return ref.Name
	}
	return ""
}

// TestThreeReplicasShareTheAtsAndWriteNothingTwice runs the At
// controller sharded over six ranges on three replicas (each its own
// manager, Member and client), 150 Ats due at one instant; while they run,
// one replica stops gracefully and a fourth joins. Every At ends DONE with
// exactly one Pod, and nothing is written twice: each At gets one finalizer
// patch, one Pod create and two status patches, in that order, from the
// replicas that held its range as it changed hands (a replica reconciling
// an At it does not hold would double one of them). Each replica's cache
// ends holding exactly the Ats of its ranges and their Pods.
func TestThreeReplicasShareTheAtsAndWriteNothingTwice(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	managerMu.Lock()
	defer managerMu.Unlock()
	leases, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	log := &writeLog{}
	start := func(name string) *replica {
		return startReplica(t, ns, name, leases, func(c client.WithWatch) client.WithWatch { return log.wrap(name, c) })
	}
	replicas := map[string]*replica{}
	for _, n := range []string{"a", "b", "c"} {
		replicas[n] = start(n)
	}
	waitShares := func(names ...string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			total := 0
			for _, n := range names {
				total += len(replicas[n].m.Held())
			}
			return total == 6, nil
		})
		if err != nil {
			t.Fatalf("the replicas %v never held the 6 ranges between them", names)
		}
	}
	waitShares("a", "b", "c")

	// A kubelet: each Pod finishes a moment after it appears.
	kctx, kcancel := context.WithCancel(context.Background())
	defer kcancel()
	go func() {
		for kctx.Err() == nil {
			var pods corev1.PodList
			if c.List(kctx, &pods, client.InNamespace(ns)) == nil {
				for i := range pods.Items {
					if !podtest.Finished(&pods.Items[i]) {
						podtest.Complete(kctx, c, &pods.Items[i])
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()

	const n = 150
	due := time.Now().Add(3 * time.Second)
	for i := range n {
		if err := c.Create(t.Context(), newAt(ns, fmt.Sprintf("at-%03d", i), due.UTC().Format(time.RFC3339Nano))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(due) + 500*time.Millisecond)
	replicas["c"].stop() // graceful: drains, releases its ranges
	replicas["d"] = start("d")

	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var ats atv1.AtList
		if err := c.List(ctx, &ats, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, at := range ats.Items {
			if at.Status.Phase != atv1.PhaseDone {
				return false, nil
			}
		}
		return len(ats.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("not every At is DONE")
	}
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	podsOf := map[string]int{}
	for i := range pods.Items {
		podsOf[metav1GetController(&pods.Items[i])]++
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	byAt := map[string][]write{}
	creates := map[string]int{}
	unknownCreates := map[string]int{}
	for _, w := range log.writes {
		byAt[w.at] = append(byAt[w.at], w)
		switch {
		case w.what == "create" && w.unknown:
			unknownCreates[w.at]++
		case w.what == "create":
			creates[w.at]++
		}
	}
	moved := 0
	for i := range n {
		name := fmt.Sprintf("at-%03d", i)
		if podsOf[name] != 1 || creates[name] > 1 || creates[name]+unknownCreates[name] < 1 {
			t.Errorf("At %s: %d Pods, %d Pod creates (and %d of unknown outcome); want 1 and 1", name, podsOf[name], creates[name], unknownCreates[name])
		}
		// Nothing doubled: one finalizer patch, one Pod create, two status
		// patches (RUNNING, DONE), in that order, whichever replicas sent
		// them as the At's range changed hands; a write of unknown outcome
		// may stand for one of them (see mayHaveWritten).
		ws := slices.SortedFunc(slices.Values(byAt[name]), func(a, b write) int { return a.when.Compare(b.when) })
		var kinds, writers []string
		unknown := map[string]int{}
		for _, w := range ws {
			if w.unknown {
				unknown[w.what]++
			} else {
				kinds = append(kinds, w.what)
			}
			if !slices.Contains(writers, w.replica) {
				writers = append(writers, w.replica)
			}
		}
		want := []string{"patch", "create", "patch status", "patch status"}
		if len(unknown) > 0 {
			// A write whose answer was lost sends the At round again, and
			// the next look may find its Pod finished already: RUNNING is
			// then skipped, DONE written at once.
			unknown["patch status"]++
		}
		if !mayHaveWritten(kinds, unknown, want) {
			var failed []string
			for _, w := range log.failed {
				if strings.HasPrefix(w.at, name) {
					failed = append(failed, fmt.Sprintf("%s by %s at %s", w.what, w.replica, w.when.Format("15:04:05.000")))
				}
			}
			t.Errorf("At %s: writes %v (by %v), want %v; failed writes: %v", name, kinds, writers, want, failed)
		}
		if len(writers) > 1 {
			moved++
		}
	}
	// Each replica left caches the Ats of the ranges it holds and their
	// Pods, and no others.
	var ats atv1.AtList
	if err := c.List(t.Context(), &ats, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var cached []string
	for _, name := range []string{"a", "b", "d"} {
		r := replicas[name]
		held := r.m.Held()
		var want []string
		for i := range ats.Items {
			if held.Contains(&ats.Items[i]) {
				want = append(want, ats.Items[i].Name)
			}
		}
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var mine atv1.AtList
			var pods corev1.PodList
			if r.c.List(ctx, &mine) != nil || r.c.List(ctx, &pods) != nil {
				return false, nil
			}
			var got, podOwners []string
			for _, at := range mine.Items {
				got = append(got, at.Name)
			}
			for i := range pods.Items {
				podOwners = append(podOwners, metav1GetController(&pods.Items[i]))
			}
			slices.Sort(got)
			slices.Sort(podOwners)
			return slices.Equal(got, want) && slices.Equal(podOwners, want), nil
		})
		if err != nil {
			t.Errorf("replica %s (ranges %s) does not cache exactly the %d Ats of its ranges and their Pods", name, held, len(want))
		}
		cached = append(cached, fmt.Sprintf("%s %d", name, len(want)))
	}
	t.Logf("%d Ats, %d writes; %d Ats changed hands (c stopped, d joined); Ats cached per replica: %v", n, len(log.writes), moved, cached)
}

// replica is one replica of a sharded At controller: its Member, its
// manager's cache, and how to stop it.
type replica struct {
	m    *shard.Member
	c    cache.Cache
	stop func()
}

// startReplica starts a sharded At controller in ns (its own manager,
// cache following its Member's six ranges, and client, wrapped by wrap)
// and stops it when the test ends. The caller holds managerMu.
func startReplica(t *testing.T, ns, name string, leases kubernetes.Interface, wrap func(client.WithWatch) client.WithWatch) *replica {
	t.Helper()
	m := shard.NewMember(leases.CoordinationV1(), controller.Name)
	m.Namespace, m.Name, m.Identity, m.RangeCount = ns, "at", name, 6
	m.LeaseDuration, m.RenewDeadline, m.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 250*time.Millisecond
	copts, err := controller.CacheOptions(cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}, m)
	if err != nil {
		t.Fatal(err)
	}
	copts = onTheDiet(t, copts)
	// As the At's main does: every write of a reconcile checked against
	// its range's Lease.
	mgr, err := ctrl.NewManager(shard.Fence(env.Config), ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      copts,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(m); err != nil {
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{Client: wrap(withWatch{mgr.GetClient()}), Shard: m}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	r := &replica{m: m, c: mgr.GetCache()}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager of %s: %v", name, err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// withWatch lets a manager's client go through interceptor.NewClient; the
// controller never watches through it.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, fmt.Errorf("watch is not supported")
}

// TestASharedAtControllerAdoptsThePodsCreatedBeforeItRanSharded: Pods
// created before the controller ran sharded carry no range label, so no
// replica's cache holds them. A RUNNING At whose Pod is one of them, and a
// PENDING At whose Pod was created before its status was written, both
// end DONE with that one Pod, which the sharded controller labels with
// its At's range rather than calling it deleted (the RUNNING At) or
// failing on its create forever (the PENDING one).
func TestASharedAtControllerAdoptsThePodsCreatedBeforeItRanSharded(t *testing.T) {
	c, stop := startManager(t) // unsharded
	ns := env.Namespace(t)
	running := newAt(ns, "running", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), running); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, client.ObjectKeyFromObject(running), "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
	stop()

	// No controller runs: an At and its Pod, as if the status write that
	// follows the Pod's create had not happened.
	pending := newAt(ns, "pending", rfc3339(time.Now().Add(-time.Second)))
	if err := c.Create(t.Context(), pending); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.PodName(pending), Labels: map[string]string{controller.AtUIDLabel: string(pending.UID)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "command", Image: atv1.DefaultImage, Command: []string{"/bin/sh", "-c", pending.Spec.Command}}}},
	}
	if err := controllerutil.SetControllerReference(pending, pod, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	managerMu.Lock()
	defer managerMu.Unlock()
	leases, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	startReplica(t, ns, "a", leases, func(c client.WithWatch) client.WithWatch { return c })
	for _, at := range []*atv1.At{running, pending} {
		name := controller.PodName(at)
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, err
			}
			return p.Labels[follow.RangeLabel] != "", nil
		})
		if err != nil {
			t.Fatalf("the Pod of the %s At was never labelled with its range: %v", at.Name, err)
		}
		waitFor(t, c, client.ObjectKeyFromObject(at), at.Name+" At RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
		finishPod(t, c, ns, name, 0)
		done := waitFor(t, c, client.ObjectKeyFromObject(at), at.Name+" At DONE", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
		if done.Status.Outcome != atv1.OutcomeSucceeded {
			t.Errorf("the %s At ended %s; want %s (its Pod was adopted, not called deleted)", at.Name, done.Status.Outcome, atv1.OutcomeSucceeded)
		}
		if pods := podsOf(t, c, done); len(pods) != 1 {
			t.Errorf("the %s At has %d Pods; want its one Pod", at.Name, len(pods))
		}
	}
}

func TestMayHaveWritten(t *testing.T) {
	want := []string{"patch", "create", "patch status", "patch status"}
	for _, tt := range []struct {
		name     string
		accepted []string
		unknown  map[string]int
		ok       bool
	}{
		{"all accepted", want, nil, true},
		{"one missing, stood for by an unknown", []string{"patch", "create", "patch status"}, map[string]int{"patch status": 1}, true},
		{"one missing, no unknown", []string{"patch", "create", "patch status"}, nil, false},
		{"one missing, an unknown of another kind", []string{"patch", "create", "patch status"}, map[string]int{"create": 1}, false},
		{"one doubled", []string{"patch", "create", "create", "patch status", "patch status"}, map[string]int{"create": 1}, false},
		{"out of order", []string{"create", "patch", "patch status", "patch status"}, nil, false},
		{"an unknown beside all accepted", want, map[string]int{"patch status": 1}, true},
	} {
		if got := mayHaveWritten(tt.accepted, tt.unknown, want); got != tt.ok {
			t.Errorf("%s: mayHaveWritten(%v, %v) = %t, want %t", tt.name, tt.accepted, tt.unknown, got, tt.ok)
		}
	}
}
