package shard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
	elect := func(l *shard.Leader, leading chan struct{}) {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: l, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(leading) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); le.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
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
	leadingA := make(chan struct{})
	elect(a, leadingA)
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
	elect(b, make(chan struct{}))
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
