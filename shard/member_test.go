package shard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/internal/shardtest"
)

// Test timings: a range moves 2 s after its holder vanished.
const (
	testLease   = 2 * time.Second
	testRenew   = 1500 * time.Millisecond
	testRetry   = 250 * time.Millisecond
	testRanges  = 6
	settleLimit = 10 * time.Second
	// fieldOwner is the test replicas' field manager.
	fieldOwner = "widgets-controller"
)

// replica is one Member under test.
type replica struct {
	name   string
	m      *shard.Member
	cancel context.CancelFunc
	done   chan struct{}
	// cut, once set, fails every Lease request: the replica has vanished
	// from the API server's view (a kill -9, a partition).
	cut *atomic.Bool
	// n counts its Lease requests.
	n *counts
}

// cutLeases fails every request once cut is set, and counts the others.
type cutLeases struct {
	coordinationv1client.LeasesGetter
	cut *atomic.Bool
	n   *counts
}

// counts are a replica's Lease requests.
type counts struct {
	reads, writes atomic.Int64
	// conflictRelease, once set, fails the next release (an update that
	// empties a Lease's holder) with a conflict.
	conflictRelease atomic.Bool
}

func (c cutLeases) Leases(ns string) coordinationv1client.LeaseInterface {
	return cutLease{c.LeasesGetter.Leases(ns), c.cut, c.n}
}

type cutLease struct {
	coordinationv1client.LeaseInterface
	cut *atomic.Bool
	n   *counts
}

var errCut = errors.New("the connection to the API server is cut")

func (c cutLease) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	c.n.reads.Add(1)
	return c.LeaseInterface.Get(ctx, name, o)
}

func (c cutLease) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	c.n.reads.Add(1)
	return c.LeaseInterface.List(ctx, o)
}

func (c cutLease) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	c.n.writes.Add(1)
	return c.LeaseInterface.Create(ctx, l, o)
}

func (c cutLease) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") == "" && c.n.conflictRelease.CompareAndSwap(true, false) {
		// Another write landed first: what a renewal still in flight does.
		return nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("the object has been modified"))
	}
	c.n.writes.Add(1)
	return c.LeaseInterface.Update(ctx, l, o)
}

func (c cutLease) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if c.cut.Load() {
		return errCut
	}
	c.n.writes.Add(1)
	return c.LeaseInterface.Delete(ctx, name, o)
}

// group is the replicas of one test, with a record of who worked on what.
type group struct {
	t        *testing.T
	ns, name string
	leases   coordinationv1client.LeasesGetter

	mu       sync.Mutex
	replicas map[string]*replica
	// working is, per object, the replica working on it now.
	working    map[types.UID]string
	violations []string
	worked     map[types.UID]map[string]bool
}

func newGroup(t *testing.T) *group {
	e := env.Require(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &group{t: t, ns: e.Namespace(t), name: "widgets", leases: cs.CoordinationV1(),
		replicas: map[string]*replica{}, working: map[types.UID]string{}, worked: map[types.UID]map[string]bool{}}
}

// start runs a new replica.
func (g *group) start(name string) *replica {
	g.t.Helper()
	return g.startWith(name, nil)
}

// startWith runs a new replica whose Member set changes before it starts.
func (g *group) startWith(name string, set func(*shard.Member)) *replica {
	g.t.Helper()
	cut := &atomic.Bool{}
	r := &replica{name: name, cut: cut, n: &counts{}, done: make(chan struct{})}
	r.m = shard.NewMember(cutLeases{g.leases, cut, r.n}, fieldOwner)
	r.m.Namespace, r.m.Name, r.m.Identity, r.m.RangeCount = g.ns, g.name, name, testRanges
	r.m.LeaseDuration, r.m.RenewDeadline, r.m.RetryPeriod, r.m.DrainTimeout = testLease, testRenew, testRetry, time.Minute
	if set != nil {
		set(r.m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		if err := r.m.Start(ctx); err != nil {
			g.t.Errorf("%s: %v", name, err)
		}
	}()
	g.mu.Lock()
	g.replicas[name] = r
	g.mu.Unlock()
	g.t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// stop stops a replica gracefully and waits until it has given up its
// ranges.
func (g *group) stop(r *replica) {
	r.cancel()
	<-r.done
	g.mu.Lock()
	delete(g.replicas, r.name)
	g.mu.Unlock()
}

// work runs a worker per replica, over objs, until ctx ends: each tries to
// enter every object and, when admitted, holds it for a moment; two
// replicas working on one object at once is a violation.
func (g *group) work(ctx context.Context, objs []client.Object) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		g.mu.Lock()
		rs := make([]*replica, 0, len(g.replicas))
		for _, r := range g.replicas {
			rs = append(rs, r)
		}
		g.mu.Unlock()
		for _, r := range rs {
			for _, obj := range objs {
				g.mu.Lock()
				busy := g.working[obj.GetUID()] == r.name
				g.mu.Unlock()
				if busy {
					continue
				}
				wctx, done, err := r.m.Enter(ctx, obj)
				if err != nil {
					continue
				}
				wg.Go(func() {
					defer done()
					g.begin(r.name, obj.GetUID())
					select {
					case <-wctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
					g.end(obj.GetUID())
				})
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *group) begin(who string, uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if other, ok := g.working[uid]; ok && other != who {
		g.violations = append(g.violations, fmt.Sprintf("%s entered object %s while %s worked on it", who, uid, other))
	}
	g.working[uid] = who
	if g.worked[uid] == nil {
		g.worked[uid] = map[string]bool{}
	}
	g.worked[uid][who] = true
}

func (g *group) end(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.working, uid)
}

// waitBalanced waits until the replicas named hold every range once
// between them, each its share, and returns how long it took.
func (g *group) waitBalanced(names ...string) time.Duration {
	g.t.Helper()
	start := time.Now()
	share := (testRanges + len(names) - 1) / len(names)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		seen := map[string]int{}
		total := 0
		last = ""
		for _, n := range names {
			g.mu.Lock()
			r := g.replicas[n]
			g.mu.Unlock()
			held := r.m.Held()
			last += fmt.Sprintf("%s: %s; ", n, held)
			if len(held) > share {
				return false, nil
			}
			for _, h := range held {
				seen[h.String()]++
			}
			total += len(held)
		}
		return total == testRanges && len(seen) == testRanges, nil
	})
	if err != nil {
		g.t.Fatalf("the ranges were not balanced among %v within %s: %s", names, settleLimit, last)
	}
	return time.Since(start)
}

// groupLeases lists the group's Leases.
func (g *group) groupLeases() []coordinationv1.Lease {
	g.t.Helper()
	leases, err := g.leases.Leases(g.ns).List(context.Background(), metav1.ListOptions{LabelSelector: shard.GroupLabel + "=" + g.name})
	if err != nil {
		g.t.Fatal(err)
	}
	return leases.Items
}

// objects returns n objects with random UIDs.
func objects(n int) []client.Object {
	out := make([]client.Object, n)
	for i := range out {
		w := &testapi.Widget{}
		w.SetName(fmt.Sprintf("w-%d", i))
		w.SetUID(uuid.NewUUID())
		out[i] = w
	}
	return out
}

// TestMembersShareTheRangesAndNoObjectIsWorkedOnByTwoAtOnce runs one
// replica, then three, then two (one stopped gracefully), then a fourth
// joins and one vanishes without releasing anything (its connection to
// the API server cut, as after kill -9 or a partition), with workers
// entering 200 objects all along: every range is held by exactly one
// replica, each its share; a gracefully stopped replica releases its
// Leases (its ranges move at the next round), a vanished one's move only
// once they have expired; and no object is ever worked on by two replicas
// at once.
func TestMembersShareTheRangesAndNoObjectIsWorkedOnByTwoAtOnce(t *testing.T) {
	g := newGroup(t)
	objs := objects(200)
	ctx, cancel := context.WithCancel(context.Background())
	workers := make(chan struct{})
	go func() { defer close(workers); g.work(ctx, objs) }()
	defer func() { cancel(); <-workers }()

	g.start("a")
	t.Logf("one replica holds all %d ranges after %s", testRanges, g.waitBalanced("a"))
	if v := metricstest.Value(t, "reconcilekit_shard_ranges_held", map[string]string{"group": g.name}); v != testRanges {
		t.Errorf("reconcilekit_shard_ranges_held = %v with one replica, want %d", v, testRanges)
	}
	g.start("b")
	c := g.start("c")
	t.Logf("1 → 3 replicas: balanced after %s", g.waitBalanced("a", "b", "c"))

	g.stop(c)
	// A graceful stop releases: no Lease names c once it has stopped, so
	// its ranges move at the others' next round, not at expiry.
	for _, l := range g.groupLeases() {
		if ptr.Deref(l.Spec.HolderIdentity, "") == "c" {
			t.Errorf("Lease %s still names the stopped replica c", l.Name)
		}
	}
	t.Logf("3 → 2 replicas (graceful stop): balanced after %s", g.waitBalanced("a", "b"))

	g.start("d")
	g.waitBalanced("a", "b", "d")
	b := g.replicas["b"]
	b.cut.Store(true) // b vanishes: no renewal, no release
	cutAt := time.Now()
	took := g.waitBalanced("a", "d")
	t.Logf("a replica vanished: its ranges moved after %s (lease duration %s)", took, testLease)
	if since := time.Since(cutAt); since < testLease-testRetry {
		t.Errorf("a vanished replica's ranges moved after %s, before its Leases could have expired (%s)", since, testLease)
	}
	if held := b.m.Held(); len(held) != 0 {
		t.Errorf("the vanished replica still admits work in %s", held)
	}

	cancel()
	<-workers
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, v := range g.violations {
		t.Error(v)
	}
	for _, o := range objs {
		if len(g.worked[o.GetUID()]) == 0 {
			t.Errorf("no replica ever worked on %s", o.GetName())
		}
	}
}

// TestARangeIsReleasedOnlyAfterItsWorkEnds proves the fencing: a replica
// that must give up a range (a second replica joined) admits no new work
// in it at once, keeps its Lease while a piece of work is still running
// in it, and releases the Lease as soon as that work ends.
func TestARangeIsReleasedOnlyAfterItsWorkEnds(t *testing.T) {
	g := newGroup(t)
	a := g.start("a")
	g.waitBalanced("a")
	// Hold a piece of work in every range of a.
	var dones []func()
	byRange := map[string]client.Object{}
	for _, o := range objects(400) {
		for _, r := range a.m.Held() {
			if r.Contains(o) && byRange[r.String()] == nil {
				byRange[r.String()] = o
			}
		}
	}
	for _, o := range byRange {
		_, done, err := a.m.Enter(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, done)
	}
	g.start("b")
	// a gives up half its ranges: they admit no work, yet stay a's.
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		return len(a.m.Held()) == testRanges/2, nil
	})
	if err != nil {
		t.Fatalf("a still admits work in %s after b joined", a.m.Held())
	}
	time.Sleep(2 * testLease)
	if held := g.replicas["b"].m.Held(); len(held) != 0 {
		t.Errorf("b holds %s while a's work in those ranges runs", held)
	}
	for _, l := range g.groupLeases() {
		if l.Labels[shard.MemberLabel] != "true" && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "a") {
			t.Errorf("Lease %s is held by %q while a's work in its range runs", l.Name, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
	}
	for _, done := range dones {
		done()
	}
	t.Logf("b took its share %s after a's work ended", g.waitBalanced("a", "b"))
}

// TestAStoppingMemberIsCountedOutWhileItsRangesDrain proves the order of a
// graceful stop: the stopping replica's member Lease is gone while its
// ranges, with work still in flight, are still its own, so that the others
// already count it out when each range is released and take it in their
// first round that sees it free (with the member Lease deleted last, they
// would wait a round more on a loaded machine).
func TestAStoppingMemberIsCountedOutWhileItsRangesDrain(t *testing.T) {
	g := newGroup(t)
	g.start("a")
	b := g.start("b")
	g.waitBalanced("a", "b")
	// Hold a piece of work in one range of b.
	var done func()
	for _, o := range objects(400) {
		if held := b.m.Held(); len(held) > 0 && held[0].Contains(o) {
			var err error
			if _, done, err = b.m.Enter(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if done == nil {
		t.Fatal("no object of b's first range among 400")
	}
	done = sync.OnceFunc(done)
	t.Cleanup(done) // before b's own cleanup waits for its drain
	b.cancel()
	// No new work in any of b's ranges, at once: its work is refused
	// while the member Lease is being deleted, not after.
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		return len(b.m.Held()) == 0, nil
	})
	if err != nil {
		t.Errorf("b, stopping, still admits work in %s", b.m.Held())
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		for _, l := range g.groupLeases() {
			if l.Labels[shard.MemberLabel] == "true" && ptr.Deref(l.Spec.HolderIdentity, "") == "b" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the member Lease of b, stopping, was still there after %s", settleLimit)
	}
	var draining []string
	for _, l := range g.groupLeases() {
		if l.Labels[shard.MemberLabel] != "true" && ptr.Deref(l.Spec.HolderIdentity, "") == "b" {
			draining = append(draining, l.Name)
		}
	}
	if len(draining) == 0 {
		t.Errorf("b's member Lease went only after b released every range; want it gone while a range's work drains")
	}
	select {
	case <-b.done:
		t.Errorf("b stopped with work in flight in its range")
	default:
	}
	done()
	<-b.done
	g.mu.Lock()
	delete(g.replicas, "b")
	g.mu.Unlock()
	t.Logf("with b's member Lease gone while %v drained, a took every range %s after the work ended", draining, g.waitBalanced("a"))
}

// TestAReleaseThatConflictsIsRetried: a release whose update conflicts
// (a renewal of the stopping replica's election landed after release read
// the Lease; seen in CI under load) reads the Lease again and releases it,
// instead of leaving it to expire.
func TestAReleaseThatConflictsIsRetried(t *testing.T) {
	g := newGroup(t)
	g.start("a")
	b := g.start("b")
	g.waitBalanced("a", "b")
	b.n.conflictRelease.Store(true)
	g.stop(b)
	if b.n.conflictRelease.Load() {
		t.Fatal("no release conflicted: the test proves nothing")
	}
	for _, l := range g.groupLeases() {
		if ptr.Deref(l.Spec.HolderIdentity, "") == "b" {
			t.Errorf("Lease %s still names b, stopped gracefully after a release that conflicted", l.Name)
		}
	}
}

// TestAMemberWithBadSettingsSaysWhatIsWrong checks the validation: Start
// refuses, permanent, a Member Validate refuses, naming what is wrong.
func TestAMemberWithBadSettingsSaysWhatIsWrong(t *testing.T) {
	member := func(set func(m *shard.Member)) *shard.Member {
		m := shard.NewMember(cutLeases{}, fieldOwner)
		m.Namespace, m.Name, m.RangeCount = "n", "x", 2
		set(m)
		return m
	}
	tests := []struct {
		name string
		m    *shard.Member
		want string
	}{
		{"nothing set", &shard.Member{}, "no Leases client: build the Member with shard.NewMember(leases, fieldOwner)"},
		{"a literal, not from NewMember", &shard.Member{Namespace: "n", Name: "x", RangeCount: 2}, errors.ErrNoFieldOwner.Error()},
		{"no field owner", shard.NewMember(cutLeases{}, ""), errors.ErrNoFieldOwner.Error()},
		{"no ranges", member(func(m *shard.Member) { m.RangeCount = 0 }), "0 ranges"},
		{"ranges out of bounds", member(func(m *shard.Member) { m.RangeCount = -1 }), "-1 ranges"},
		{"no name", member(func(m *shard.Member) { m.Name = "" }), "Namespace and Name are required"},
		{"lease not longer than renew", member(func(m *shard.Member) { m.LeaseDuration = 10 * time.Second }),
			"LeaseDuration (10s) must be more than RenewDeadline (10s)"},
		{"lease not whole seconds", member(func(m *shard.Member) { m.LeaseDuration = 15500 * time.Millisecond }),
			"whole seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.m.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, shard.ErrInvalidMember) {
				t.Errorf("Validate = %v, want shard.ErrInvalidMember containing %q", err, tt.want)
			}
			err := tt.m.Start(context.Background())
			if c, _ := errors.Classify(err); c != errors.ClassPermanent || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start = %v (%v), want a permanent error containing %q", err, c, tt.want)
			}
		})
	}
	if err := member(func(*shard.Member) {}).Validate(); err != nil {
		t.Errorf("Validate of a Member set right: %v", err)
	}
}

// TestRangeCountSplitsTheHashSpace: a Member splits the hash space into
// RangeCount ranges: its Holdings, what a following cache reads, have that
// length.
func TestRangeCountSplitsTheHashSpace(t *testing.T) {
	m := shard.NewMember(cutLeases{}, fieldOwner)
	m.Namespace, m.Name, m.RangeCount = "n", "x", 4
	if err := m.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
	if got := len(m.Holdings()); got != 4 {
		t.Errorf("len(Holdings()) = %d, want 4", got)
	}
}

// TestEveryLeaseWriteCarriesTheFieldOwner: the Leases a Member writes
// (its member Lease, the Leases of the ranges it holds, through client-go's
// leader election) record the operator's field manager, and no other.
func TestEveryLeaseWriteCarriesTheFieldOwner(t *testing.T) {
	g := newGroup(t)
	g.start("a")
	g.waitBalanced("a")
	leases := g.groupLeases()
	if len(leases) != testRanges+1 {
		t.Fatalf("%d Leases, want %d ranges and one member", len(leases), testRanges)
	}
	for _, l := range leases {
		var managers []string
		for _, e := range l.ManagedFields {
			managers = append(managers, e.Manager)
		}
		if !slices.Equal(slices.Compact(managers), []string{fieldOwner}) {
			t.Errorf("Lease %s: field managers %v, want only %q", l.Name, managers, fieldOwner)
		}
	}
}

// TestGuardHandsEachObjectToTheReplicaThatHoldsItsRange runs two replicas
// over 60 Widgets: through Guard, each Widget's request reaches the inner
// reconciler of exactly one replica, the one that holds its range; a
// request for a Widget that is gone reaches neither (no reconciler acts on
// an object it cannot see, which may be another replica's). Source enqueues, on each replica, exactly the Widgets of the ranges
// it acquired.
func TestGuardHandsEachObjectToTheReplicaThatHoldsItsRange(t *testing.T) {
	g := newGroup(t)
	c := env.Client(t)
	widgets := shardtest.Create(t, c, g.ns, "w", 60, shardtest.NewWidget)
	type queued struct {
		mu   sync.Mutex
		reqs map[reconcile.Request]bool
	}
	var sources []*queued
	var members []*shard.Member
	for _, name := range []string{"a", "b"} {
		r := g.start(name)
		q := &queued{reqs: map[reconcile.Request]bool{}}
		sources = append(sources, q)
		members = append(members, r.m)
		src := r.m.Source(c, &testapi.WidgetList{})
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(func() { cancel(); queue.ShutDown() })
		if err := src.Start(ctx, queue); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				req, shutdown := queue.Get()
				if shutdown {
					return
				}
				q.mu.Lock()
				q.reqs[req] = true
				q.mu.Unlock()
				queue.Done(req)
			}
		}()
	}
	g.waitBalanced("a", "b")

	calls := make([]map[string]int, 2)
	var guards []reconcile.Reconciler
	for i, m := range members {
		calls[i] = map[string]int{}
		inner := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			calls[i][req.Name]++
			return reconcile.Result{}, nil
		})
		guards = append(guards, shard.Guard[*testapi.Widget](m, c, inner))
	}
	for _, w := range widgets {
		for _, gd := range guards {
			if _, err := gd.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, gd := range guards {
		if _, err := gd.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.ns, Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range widgets {
		holder := -1
		for i, m := range members {
			if m.Contains(w) {
				holder = i
			}
		}
		for i := range members {
			want := 0
			if i == holder {
				want = 1
			}
			if got := calls[i][w.GetName()]; got != want {
				t.Errorf("Widget %s (range held by replica %d) reached replica %d's reconciler %d times, want %d", w.GetName(), holder, i, got, want)
			}
		}
	}
	for i := range members {
		if calls[i]["gone"] != 0 {
			t.Errorf("replica %d: a gone Widget's request reached the reconciler %d times, want 0", i, calls[i]["gone"])
		}
	}
	// Each replica's Source enqueued the Widgets of the ranges it acquired
	// (the first replica held every range before the second joined).
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) { return ok(), nil }); err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	for i, m := range members {
		waitFor(fmt.Sprintf("replica %d's Source to enqueue its Widgets", i), func() bool {
			sources[i].mu.Lock()
			defer sources[i].mu.Unlock()
			for _, w := range widgets {
				if m.Contains(w) && !sources[i].reqs[reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}] {
					return false
				}
			}
			return true
		})
	}
}

// TestWhatHoldingRangesCostsInLeaseRequests measures, for three replicas
// sharing six ranges once balanced, the Lease requests each sends per
// round (RetryPeriod): one renewal per range it holds and its member
// Lease's read and renewal, plus the lists of the group's Leases (two
// through v0.5.x, one by each domain's label key). The docs
// quote it (docs/sharding.md); rounds are counted, not timed.
func TestWhatHoldingRangesCostsInLeaseRequests(t *testing.T) {
	g := newGroup(t)
	for _, n := range []string{"a", "b", "c"} {
		g.start(n)
	}
	g.waitBalanced("a", "b", "c")
	time.Sleep(2 * testRetry) // let the last acquisitions settle
	before := map[string][2]int64{}
	for n, r := range g.replicas {
		before[n] = [2]int64{r.n.reads.Load(), r.n.writes.Load()}
	}
	const rounds = 20
	time.Sleep(rounds * testRetry)
	for n, r := range g.replicas {
		reads := float64(r.n.reads.Load()-before[n][0]) / rounds
		writes := float64(r.n.writes.Load()-before[n][1]) / rounds
		held := len(r.m.Held())
		t.Logf("replica %s holds %d ranges: %.2f Lease writes and %.2f Lease reads per round (at the default 2 s: %.2f writes/s)",
			n, held, writes, reads, writes/2)
		// Each round renews the held ranges and the member Lease; a write
		// per round beyond that would be a leak of requests (jitter lets a
		// round run a little more often than RetryPeriod).
		if max := float64(held+1) * 1.5; writes > max {
			t.Errorf("replica %s: %.2f Lease writes per round, want at most %.2f for %d ranges and its member Lease", n, writes, max, held)
		}
	}
}
