package shard_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/shard"
)

// TestALeaderWritesOnlyWhileItsLeaseIsConfirmed runs client-go's leader
// election over a Leader fence with a clock that jumps: a candidate that
// does not lead writes nothing; the leader writes; when its clock jumps
// past the renew deadline with no renewal able to go out (a freeze), its
// writes are refused at once, reads pass, and they go out again after
// the next renewal.
func TestALeaderWritesOnlyWhileItsLeaseIsConfirmed(t *testing.T) {
	e := env.Require(t)
	ns := e.Namespace(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	const lease, renew, retry = 8 * time.Second, 6 * time.Second, 250 * time.Millisecond
	clk := followingClock(t)
	candidate := func(id string, cut *atomic.Bool) *shard.Leader {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "widgets-controller"},
			Client:     cutLeases{cs.CoordinationV1(), cut, &counts{}},
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		l := shard.NewLeader(lock, renew)
		l.Clock = clk
		return l
	}
	elect := func(l *shard.Leader) (leading chan struct{}) {
		leading, _, _ = runElection(t, leaderelection.LeaderElectionConfig{
			Lock: l, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry})
		return leading
	}
	writer := func(l *shard.Leader) client.Client {
		c, err := client.New(l.Fence(e.Config), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	create := func(c client.Client, name string) error {
		return c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}

	cutA := &atomic.Bool{}
	a := candidate("a", cutA)
	if err := create(writer(a), "before-electing"); !errors.Is(err, shard.ErrFenced) {
		t.Errorf("a write before the election: %v, want ErrFenced", err)
	}
	leadingA := elect(a)
	select {
	case <-leadingA:
	case <-time.After(settleLimit):
		t.Fatal("a did not become the leader")
	}
	ca := writer(a)
	if err := create(ca, "leading"); err != nil {
		t.Fatalf("the leader's write: %v", err)
	}
	b := candidate("b", &atomic.Bool{})
	elect(b)
	if err := create(writer(b), "standby"); !errors.Is(err, shard.ErrFenced) {
		t.Errorf("a standby's write: %v, want ErrFenced", err)
	}

	// The freeze: no renewal goes out, and a's clock jumps.
	cutA.Store(true)
	clk.Step(renew)
	err = create(ca, "after-the-jump")
	if !errors.Is(err, shard.ErrFenced) {
		t.Errorf("the leader's write after its clock jumped past the renew deadline: %v, want ErrFenced", err)
	}
	if err := e.Client(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "after-the-jump"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the fenced write reached the API server: %v", err)
	}
	if err := ca.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "leading"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("a read of the fenced leader: %v, want it to pass", err)
	}

	cutA.Store(false)
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return a.Check() == nil, nil
	})
	if err != nil {
		t.Fatalf("the leader was not confirmed again after its renewals resumed: %v", a.Check())
	}
	if err := create(ca, "renewed"); err != nil {
		t.Errorf("the leader's write after a renewal: %v", err)
	}
}

// TestALeaderSetWrongWritesNothing: a Leader without a lock, or with a
// renew deadline that is not positive, refuses every write, permanently.
func TestALeaderSetWrongWritesNothing(t *testing.T) {
	for name, l := range map[string]*shard.Leader{
		"no lock":           shard.NewLeader(nil, time.Second),
		"no renew deadline": shard.NewLeader(&resourcelock.LeaseLock{}, 0),
	} {
		t.Run(name, func(t *testing.T) {
			err := l.Check()
			if !errors.Is(err, shard.ErrInvalidLeader) {
				t.Errorf("Check: %v, want ErrInvalidLeader", err)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("Check's error classifies as %s, want permanent", class)
			}
		})
	}
}

// TestALeaderWokenFromAFreezeDoesNotReleaseTheLeaseItLost runs client-go's
// leader election with ReleaseOnCancel over a Leader, and freezes the
// leader: its Lease requests hang, as they do in a paused process, until
// another candidate has taken the Lease. Its renew loop gives up while
// frozen, so its last observation still names it the holder, and the
// release it then sends would empty the new leader's Lease (client-go's
// release checks that observation, not the Lease it reads). The Leader
// sends no such release: the Lease stays the new leader's. A release by a
// leader that does hold its Lease still goes out.
func TestALeaderWokenFromAFreezeDoesNotReleaseTheLeaseItLost(t *testing.T) {
	e := env.Require(t)
	ns := e.Namespace(t)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	const lease, renew, retry = 6 * time.Second, 5 * time.Second, 250 * time.Millisecond
	leases := cs.CoordinationV1().Leases(ns)
	holder := func() string {
		l, err := leases.Get(context.Background(), "widgets-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the Lease: %v", err)
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	elect := func(id string, frozen *freeze) (leading, stopped chan struct{}, cancel context.CancelFunc) {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "widgets-controller"},
			Client:     frozenLeases{cs.CoordinationV1(), frozen},
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		return runElection(t, leaderelection.LeaderElectionConfig{
			Lock: shard.NewLeader(lock, renew), LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
			ReleaseOnCancel: true})
	}
	await := func(ch chan struct{}, limit time.Duration, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(limit):
			t.Fatalf("%s within %s", what, limit)
		}
	}

	frozenA := newFreeze()
	leadingA, stoppedA, _ := elect("a", frozenA)
	await(leadingA, settleLimit, "a did not become the leader")
	leadingB, _, cancelB := elect("b", newFreeze())
	frozenA.freeze()
	await(leadingB, lease+settleLimit, "b did not take the Lease of the frozen a")
	frozenA.wake()
	await(stoppedA, renew+settleLimit, "the woken a did not stop leading")
	if got := holder(); got != "b" {
		t.Errorf("the Lease's holder after the woken a stopped: %q, want b (a released the Lease it had lost)", got)
	}

	// b holds its Lease: its release empties it.
	cancelB()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		return holder() == "", nil
	}); err != nil {
		t.Errorf("the Lease's holder after its leader b was cancelled: %q, want none (released)", holder())
	}
}

// freeze holds every Lease request of one candidate while frozen, until
// woken or the request's context ends: a paused process's requests.
type freeze struct {
	mu   sync.Mutex
	gate chan struct{} // closed while not frozen
}

func newFreeze() *freeze {
	g := make(chan struct{})
	close(g)
	return &freeze{gate: g}
}

func (f *freeze) freeze() { f.mu.Lock(); f.gate = make(chan struct{}); f.mu.Unlock() }
func (f *freeze) wake()   { f.mu.Lock(); close(f.gate); f.mu.Unlock() }

func (f *freeze) wait(ctx context.Context) error {
	f.mu.Lock()
	g := f.gate
	f.mu.Unlock()
	select {
	case <-g:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type frozenLeases struct {
	coordinationv1client.LeasesGetter
	f *freeze
}

func (c frozenLeases) Leases(ns string) coordinationv1client.LeaseInterface {
	return frozenLease{c.LeasesGetter.Leases(ns), c.f}
}

type frozenLease struct {
	coordinationv1client.LeaseInterface
	f *freeze
}

func (c frozenLease) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := c.f.wait(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Get(ctx, name, o)
}

func (c frozenLease) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := c.f.wait(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Create(ctx, l, o)
}

func (c frozenLease) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := c.f.wait(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Update(ctx, l, o)
}

// runElection runs client-go's leader election with cfg (its callbacks
// set here) until the test ends or cancel is called: leading is closed
// once it leads, stopped once Run has returned.
func runElection(t *testing.T, cfg leaderelection.LeaderElectionConfig) (leading, stopped chan struct{}, cancel context.CancelFunc) {
	t.Helper()
	leading, stopped = make(chan struct{}), make(chan struct{})
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { close(leading) },
		OnStoppedLeading: func() {},
	}
	le, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { defer close(stopped); le.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return leading, stopped, cancel
}
