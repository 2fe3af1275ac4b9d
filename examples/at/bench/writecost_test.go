package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/status"
)

// writeKind is one kind of write a controller sends for an At: how many of
// them one At gets here, and how to send them.
type writeKind struct {
	name   string // what the write is
	sender string // which controller sends it, and when
	perAt  int    // writes per At
	// classicAfter, oursAfter and handwrittenAfter say which controller
	// sends this write after the schedule; event marks the Ready event.
	classicAfter, oursAfter, handwrittenAfter, event bool
	// watched is the list type whose watchers see the writes; nil for
	// Events, which neither controller nor harness watches.
	watched client.ObjectList
	write   func(ctx context.Context, c client.Client, at *atv1.At) error
}

// writeKinds are the writes the two controllers send after the schedule,
// and the At's finalizer, each as its controller sends it: classic's plain
// status updates, the At's status patches with kstatus conditions through
// status.Writer (the Loop's writer), the hand-written At's status updates
// with the same conditions, the At's finalizer through the
// finalizer package, the Ready event as controller-runtime's recorder
// sends it, and the Pod both create.
func writeKinds() []writeKind {
	return []writeKind{
		{
			name: "status update: phase only, RUNNING then DONE", sender: "classic, after the schedule", perAt: 2, classicAfter: true,
			watched: &atv1.AtList{},
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				at.Status.Phase, at.Status.PodName = atv1.PhaseRunning, at.Name+"-pod"
				if err := c.Status().Update(ctx, at); err != nil {
					return err
				}
				at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeSucceeded
				return c.Status().Update(ctx, at)
			},
		},
		{
			name: "status merge patch: phase, observedGeneration and kstatus conditions, RUNNING then DONE", sender: "reconcilekit, after the schedule", perAt: 2, oursAfter: true,
			watched: &atv1.AtList{},
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				w := status.NewWriter(c, controller.Name)
				s := w.Snapshot(at)
				at.Status.Phase, at.Status.PodName = atv1.PhaseRunning, controller.PodName(at)
				status.ObserveGeneration(at)
				status.MarkReconciling(at, controller.ReasonPodRunning, fmt.Sprintf("pod %s runs the command", at.Status.PodName))
				if _, err := s.Write(ctx); err != nil {
					return err
				}
				s = w.Snapshot(at)
				at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeSucceeded
				status.MarkReady(at, controller.ReasonCommandSucceeded, fmt.Sprintf("pod %s ran the command successfully", at.Status.PodName))
				_, err := s.Write(ctx)
				return err
			},
		},
		{
			name: "status update: phase, observedGeneration and kstatus conditions, RUNNING then DONE", sender: "hand-written, after the schedule", perAt: 2, handwrittenAfter: true,
			watched: &atv1.AtList{},
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				at.Status.Phase, at.Status.PodName = atv1.PhaseRunning, controller.PodName(at)
				status.ObserveGeneration(at)
				status.MarkReconciling(at, controller.ReasonPodRunning, fmt.Sprintf("pod %s runs the command", at.Status.PodName))
				if err := c.Status().Update(ctx, at); err != nil {
					return err
				}
				at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeSucceeded
				status.MarkReady(at, controller.ReasonCommandSucceeded, fmt.Sprintf("pod %s ran the command successfully", at.Status.PodName))
				return c.Status().Update(ctx, at)
			},
		},
		{
			name: "finalizer merge patch: added, then removed", sender: "reconcilekit, at creation and at deletion", perAt: 2,
			watched: &atv1.AtList{},
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				fw := finalizer.NewWriter(c, controller.Name)
				if _, err := fw.Add(ctx, at, controller.PodCleanupFinalizer); err != nil {
					return err
				}
				_, err := fw.Remove(ctx, at, controller.PodCleanupFinalizer)
				return err
			},
		},
		{
			name: "event create (events.k8s.io), Normal, on Ready", sender: "reconcilekit and hand-written, after the schedule", perAt: 1, oursAfter: true, handwrittenAfter: true, event: true,
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				now := time.Now()
				return c.Create(ctx, &eventsv1.Event{
					ObjectMeta:          metav1.ObjectMeta{Namespace: at.Namespace, Name: fmt.Sprintf("%s.%x", at.Name, now.UnixNano())},
					EventTime:           metav1.NewMicroTime(now),
					ReportingController: controller.Name,
					ReportingInstance:   controller.Name + "-bench",
					Action:              "Reconcile",
					Reason:              controller.ReasonCommandSucceeded,
					Note:                fmt.Sprintf("pod %s ran the command successfully", controller.PodName(at)),
					Type:                corev1.EventTypeNormal,
					Regarding:           corev1.ObjectReference{APIVersion: atv1.GroupVersion.String(), Kind: "At", Namespace: at.Namespace, Name: at.Name, UID: at.UID, ResourceVersion: at.ResourceVersion},
				})
			},
		},
		{
			name: "Pod create: labelled, owned by the At", sender: "all, after the schedule", perAt: 1, classicAfter: true, oursAfter: true, handwrittenAfter: true,
			watched: &corev1.PodList{},
			write: func(ctx context.Context, c client.Client, at *atv1.At) error {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: controller.PodName(at), Labels: map[string]string{controller.AtUIDLabel: string(at.UID)}},
					Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
						Name: "command", Image: atv1.DefaultImage, Command: []string{"/bin/sh", "-c", at.Spec.Command},
					}}},
				}
				if err := controllerutil.SetControllerReference(at, pod, c.Scheme()); err != nil {
					return err
				}
				return c.Create(ctx, pod)
			},
		},
	}
}

// writeCost is what one kind of write cost the control plane, per write.
type writeCost struct {
	kind writeKind
	// writes is how many writes the watches (or, for Events, a list)
	// showed in all rounds: what the figures are divided by.
	writes          int
	apiserver, etcd time.Duration // per write, idle CPU taken out
	// apiserverRounds is the API server's CPU per write in each round.
	apiserverRounds []time.Duration
}

// writeCostWatchers is how many watches see each write of a watched kind:
// in the scenarios, the controller's informer and the harness (its tracker
// of Ats, its kubelet of Pods).
const writeCostWatchers = 2

// measureWriteCosts measures, on pl, the control plane's CPU per write of
// each kind: for each kind, n fresh Ats get that kind's writes, 8 in
// flight, while writeCostWatchers watches receive them; the CPU the plane
// used at rest just before is taken out pro rata. The kinds run in rounds,
// in alternating order, and the figures are their means.
func measureWriteCosts(tb testing.TB, pl *plane, n, rounds int) []writeCost {
	tb.Helper()
	kinds := writeKinds()
	costs := make([]writeCost, len(kinds))
	for i, k := range kinds {
		costs[i].kind = k
	}
	for r := range rounds {
		order := make([]int, len(kinds))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			api, etcd, writes := measureWriteKind(tb, pl, kinds[i], n)
			costs[i].writes += writes
			costs[i].apiserver += api
			costs[i].etcd += etcd
			costs[i].apiserverRounds = append(costs[i].apiserverRounds, api/time.Duration(max(writes, 1)))
		}
	}
	for i := range costs {
		if costs[i].writes > 0 {
			costs[i].apiserver /= time.Duration(costs[i].writes)
			costs[i].etcd /= time.Duration(costs[i].writes)
		}
	}
	return costs
}

// Settling: before the plane's rest is sampled, the creation of the Ats
// (and the cleanup of the kind before) is given writeCostSettle to finish,
// and the rest is then sampled over writeCostIdle.
const (
	writeCostSettle = 3 * time.Second
	writeCostIdle   = 2 * time.Second
)

// measureWriteKind sends k's writes for n fresh Ats and returns the plane's
// CPU over them (idle taken out) and how many writes the watches saw (for
// Events, how many a list shows). A watch that sees more or fewer events
// than k sends fails the benchmark: the figures would be divided by the
// wrong number.
func measureWriteKind(tb testing.TB, pl *plane, k writeKind, n int) (api, etcd time.Duration, writes int) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := pl.namespace(tb, "writes")
	ats := make([]*atv1.At, n)
	for i := range ats {
		ats[i] = newAt(ns, fmt.Sprintf("at-%05d", i), time.Now().Add(time.Hour))
	}
	createPaced(tb, pl.admin, ats, 0)

	want := n * k.perAt
	var seen []*atomic.Int64
	if k.watched != nil {
		// From the list's resourceVersion, so that the Ats' creation is
		// not counted.
		list := k.watched.DeepCopyObject().(client.ObjectList)
		if err := pl.admin.List(ctx, list, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		for range writeCostWatchers {
			w, err := pl.admin.Watch(ctx, k.watched.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
			if err != nil {
				tb.Fatal(err)
			}
			defer w.Stop()
			count := &atomic.Int64{}
			seen = append(seen, count)
			go func() {
				for e := range w.ResultChan() {
					if e.Type == watch.Added || e.Type == watch.Modified {
						count.Add(1)
					}
				}
			}()
		}
	}

	time.Sleep(writeCostSettle)
	idleFrom := pl.cpuNow(tb)
	idleStart := time.Now()
	time.Sleep(writeCostIdle)
	start := pl.cpuNow(tb)
	idle := time.Since(idleStart)
	began := time.Now()

	if err := eachPaced(ats, 0, func(at *atv1.At) error { return k.write(ctx, pl.admin, at) }); err != nil {
		tb.Fatalf("%s: %v", k.name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for _, count := range seen {
		for count.Load() < int64(want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	end := pl.cpuNow(tb)
	window := time.Since(began)

	writes = want
	if k.watched != nil {
		time.Sleep(200 * time.Millisecond) // for an event too many to show
		for i, count := range seen {
			if got := int(count.Load()); got != want {
				tb.Errorf("%s: watch %d saw %d writes, want %d", k.name, i+1, got, want)
				writes = min(writes, got)
			}
		}
	} else {
		var events eventsv1.EventList
		if err := pl.admin.List(ctx, &events, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		if writes = len(events.Items); writes != want {
			tb.Errorf("%s: %d Events in the namespace, want %d", k.name, writes, want)
		}
	}

	used, rest := end.sub(start), start.sub(idleFrom)
	scale := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * window.Seconds() / idle.Seconds())
	}
	api = max(used.apiserver-scale(rest.apiserver), 0)
	etcd = max(used.etcd-scale(rest.etcd), 0)
	for _, obj := range []client.Object{&corev1.Pod{}, &eventsv1.Event{}, &atv1.At{}} {
		if err := pl.admin.DeleteAllOf(context.Background(), obj, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
	}
	return api, etcd, writes
}

// writeCostSection is the report's account of what each write costs, and
// what the writes each controller sends after the schedule add up to.
func writeCostSection(costs []writeCost, n, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The same control plane, after the scenarios: for each kind of write, %d fresh Ats get that write "+
		"(8 in flight, as a cluster admin) while %d watches receive them, as the controller's informer and the harness "+
		"do in the scenarios (no one watches Events). After %s for the Ats' creation to settle, the CPU the plane uses "+
		"at rest over %s is taken out, pro rata. %d rounds, in alternating order; the figures are their means, with each "+
		"round's API server figure. \"writes\" is what the watches saw (for Events, a list).\n\n",
		n, writeCostWatchers, writeCostSettle, writeCostIdle, rounds)
	b.WriteString("| write | sent by | writes | kube-apiserver CPU per write | each round | etcd CPU per write |\n|---|---|---:|---:|---|---:|\n")
	var classic, ours, handwritten, event time.Duration
	for _, c := range costs {
		var each []string
		for _, d := range c.apiserverRounds {
			each = append(each, tenthMillis(d.Seconds()))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", c.kind.name, c.kind.sender, c.writes,
			tenthMillis(c.apiserver.Seconds()), strings.Join(each, ", "), tenthMillis(c.etcd.Seconds()))
		perAt := c.apiserver * time.Duration(c.kind.perAt)
		if c.kind.classicAfter {
			classic += perAt
		}
		if c.kind.oursAfter {
			ours += perAt
		}
		if c.kind.handwrittenAfter {
			handwritten += perAt
		}
		if c.kind.event {
			event += perAt
		}
	}
	fmt.Fprintf(&b, "\nAfter the schedule, classic sends a Pod and two plain status updates: %s of API server CPU per At by this table. "+
		"The At sends a Pod, two status patches with conditions and one event: %s (%s× classic's); without the event, %s (%s×). "+
		"The hand-written At sends the same Pod, status and event, its status as two updates (PUT): %s; the At's is %s× the hand-written's. "+
		"Compare \"kube-apiserver CPU time per At, (last) schedule → end\" in the scenarios, which adds what the harness's "+
		"own writes (the kubelet's) and the watches of the run cost.\n",
		tenthMillis(classic.Seconds()), tenthMillis(ours.Seconds()), bench.FormatRatio(ours.Seconds(), classic.Seconds()),
		tenthMillis((ours - event).Seconds()), bench.FormatRatio((ours-event).Seconds(), classic.Seconds()),
		tenthMillis(handwritten.Seconds()), bench.FormatRatio(ours.Seconds(), handwritten.Seconds()))
	return b.String()
}

// TestWriteCostSectionAddsUpTheWritesAfterTheSchedule checks the sums the
// report draws from the table, with made-up costs: classic's status updates
// and Pod, the At's status patches, event and Pod, the hand-written At's
// status updates, event and Pod, and never the finalizer (it is written
// before the schedule and at deletion).
func TestWriteCostSectionAddsUpTheWritesAfterTheSchedule(t *testing.T) {
	perWrite := map[string]time.Duration{}
	var costs []writeCost
	for _, k := range writeKinds() {
		d := 2 * time.Millisecond // the finalizer's and the Pod's
		switch {
		case k.classicAfter && !k.oursAfter:
			d = 2 * time.Millisecond
		case k.oursAfter && k.event:
			d = time.Millisecond
		case k.oursAfter && !k.classicAfter:
			d = 3 * time.Millisecond
		case k.handwrittenAfter && !k.oursAfter:
			d = 4 * time.Millisecond
		case !k.classicAfter && !k.oursAfter:
			d = 50 * time.Millisecond // must count for neither
		}
		perWrite[k.name] = d
		costs = append(costs, writeCost{kind: k, writes: 10 * k.perAt, apiserver: d, etcd: d / 4, apiserverRounds: []time.Duration{d, d}})
	}
	got := writeCostSection(costs, 5, 2)
	for _, want := range []string{
		// classic: 2 status updates of 2 ms and a Pod of 2 ms.
		"classic sends a Pod and two plain status updates: 6.0 ms of API server CPU per At",
		// the At: 2 status patches of 3 ms, an event of 1 ms, a Pod of 2 ms.
		"one event: 9.0 ms (1.50× classic's); without the event, 8.0 ms (1.33×)",
		// the hand-written At: 2 status updates of 4 ms, the event, the Pod.
		"its status as two updates (PUT): 11.0 ms; the At's is 0.82× the hand-written's",
		"| 50.0 ms | 50.0 ms, 50.0 ms | 12.5 ms |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if len(perWrite) != 6 {
		t.Errorf("%d kinds of write, want 6 (the table above assumes them)", len(perWrite))
	}
}
