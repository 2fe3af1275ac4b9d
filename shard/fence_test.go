package shard_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/shard"
)

// followingClock is a fake clock that follows real time, stepped every
// 5 ms, until the test ends; Step makes it jump, as a process's clock does
// to the process when it wakes from a freeze.
func followingClock(t *testing.T) *testingclock.FakeClock {
	c := testingclock.NewFakeClock(time.Now())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			now := time.Now()
			c.Step(now.Sub(last))
			last = now
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return c
}

// mapReader is a client.Reader of the objects it holds, by name: what
// Guard reads a request's object with.
type mapReader map[string]client.Object

func (r mapReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o, ok := r[key.Name]
	if !ok {
		return apierrors.NewNotFound(testapi.GroupVersion.WithResource("widgets").GroupResource(), key.Name)
	}
	obj.SetName(o.GetName())
	obj.SetUID(o.GetUID())
	return nil
}

func (r mapReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// TestAClockJumpFencesEveryRangeUntilARenewal is the unit test of a
// freeze: a Member whose clock jumps past RenewDeadline (as a process's
// does when it wakes from a SIGSTOP, a GC pause or a paused VM), with no
// renewal able to succeed meanwhile, at once admits no work in any of its
// ranges, refuses every write of the work it had admitted (at the
// transport, even from work that ignores its context), says so to Check,
// has Guard retry rather than drop requests, and cancels the contexts of
// the work in flight; reads still pass. Once a renewal succeeds, each
// range admits work again, with no hand-over (the same holdings), while
// the work admitted before the jump still writes nothing.
func TestAClockJumpFencesEveryRangeUntilARenewal(t *testing.T) {
	e := env.Require(t)
	g := newGroup(t)
	clk := followingClock(t)
	// A renew deadline long enough that leader election's own renew loop,
	// on the real clock, does not give the ranges up while the test holds
	// the renewals back.
	const lease, renew, retry = 8 * time.Second, 6 * time.Second, 250 * time.Millisecond
	a := g.startWith("a", func(m *shard.Member) {
		m.Clock = clk
		m.LeaseDuration, m.RenewDeadline, m.RetryPeriod = lease, renew, retry
	})
	g.waitBalanced("a")

	// One object in each range, and work in flight on the first.
	var objs []client.Object
	for _, o := range objects(400) {
		if !slices.ContainsFunc(objs, func(p client.Object) bool { return sameRange(a.m, o, p) }) {
			objs = append(objs, o)
		}
	}
	if len(objs) != testRanges {
		t.Fatalf("found objects in %d ranges of %d", len(objs), testRanges)
	}
	wctx, done, err := a.m.Enter(context.Background(), objs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	// A client whose writes the fence checks; and work that ignores its
	// context (its fence travels on, its cancellation does not).
	fenced, err := client.New(shard.Fence(e.Config), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stubborn := context.WithoutCancel(wctx)
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: name}}
	}
	if err := fenced.Create(wctx, configMap("before")); err != nil {
		t.Fatalf("a write of work admitted in a confirmed range: %v", err)
	}
	holdings := a.m.Holdings()
	guarded := atomic.Int64{}
	reader := mapReader{}
	for _, o := range objs {
		reader[o.GetName()] = o
	}
	guard := shard.Guard[*testapi.Widget](a.m, reader, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		guarded.Add(1)
		return reconcile.Result{}, nil
	}))

	// The freeze: no renewal goes out, and the clock jumps.
	a.cut.Store(true)
	clk.Step(renew)

	for _, o := range objs {
		if _, done, err := a.m.Enter(context.Background(), o); !errors.Is(err, shard.ErrFenced) {
			t.Errorf("Enter(%s) after the jump: %v, want ErrFenced", o.GetName(), err)
			done()
		}
		if err := a.m.Check(o); !errors.Is(err, shard.ErrFenced) {
			t.Errorf("Check(%s) after the jump: %v, want ErrFenced", o.GetName(), err)
		}
		res, err := guard.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		if err != nil || res.RequeueAfter != retry {
			t.Errorf("Guard on %s after the jump: %+v, %v; want a retry after the retry period (%s)", o.GetName(), res, err, retry)
		}
	}
	if n := guarded.Load(); n != 0 {
		t.Errorf("Guard let %d reconciles through after the jump", n)
	}
	err = fenced.Create(stubborn, configMap("after-the-jump"))
	if !errors.Is(err, shard.ErrFenced) {
		t.Errorf("a write of work admitted before the jump, sent after it: %v, want ErrFenced", err)
	}
	if class, _ := errors.Classify(err); class != errors.ClassConflict {
		t.Errorf("a fenced write classifies as %s, want conflict (a quiet, short retry)", class)
	}
	if err := e.Client(t).Get(context.Background(), client.ObjectKeyFromObject(configMap("after-the-jump")), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the fenced write reached the API server: a Get of its object says %v", err)
	}
	if err := fenced.Get(stubborn, client.ObjectKeyFromObject(configMap("before")), &corev1.ConfigMap{}); err != nil {
		t.Errorf("a read of fenced work: %v, want it to pass", err)
	}
	select {
	case <-wctx.Done():
	case <-time.After(5 * time.Second):
		t.Errorf("the context of work in flight did not end after the jump")
	}

	// A renewal succeeds: every range admits work again, held all along.
	a.cut.Store(false)
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		for _, o := range objs {
			if err := a.m.Check(o); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the ranges were not confirmed again after the renewals resumed")
	}
	for _, o := range objs {
		_, done, err := a.m.Enter(context.Background(), o)
		if err != nil {
			t.Errorf("Enter(%s) after a renewal: %v", o.GetName(), err)
			continue
		}
		done()
	}
	if got := a.m.Holdings(); !slices.Equal(got, holdings) {
		t.Errorf("holdings went from %v to %v: a range was handed over, want every one kept", holdings, got)
	}
	if _, err := guard.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(objs[0])}); err != nil || guarded.Load() != 1 {
		t.Errorf("Guard after a renewal: %v, %d reconciles; want 1", err, guarded.Load())
	}
	if err := fenced.Create(stubborn, configMap("after-the-renewal")); !errors.Is(err, shard.ErrFenced) {
		t.Errorf("a write of work admitted before the jump, sent after the range was confirmed again: %v, want ErrFenced", err)
	}
	wctx2, done2, err := a.m.Enter(context.Background(), objs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer done2()
	if err := fenced.Create(wctx2, configMap("new-work")); err != nil {
		t.Errorf("a write of work admitted after the renewal: %v", err)
	}
}

// TestAFreezeShorterThanTheRenewDeadlineFencesNothing: a jump that leaves
// every range renewed within RenewDeadline (a short GC pause) refuses no
// work and no write.
func TestAFreezeShorterThanTheRenewDeadlineFencesNothing(t *testing.T) {
	g := newGroup(t)
	clk := followingClock(t)
	a := g.startWith("a", func(m *shard.Member) {
		m.Clock = clk
		m.LeaseDuration, m.RenewDeadline, m.RetryPeriod = 8*time.Second, 6*time.Second, 250*time.Millisecond
	})
	g.waitBalanced("a")
	o := objects(1)[0]
	wctx, done, err := a.m.Enter(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	a.cut.Store(true)
	clk.Step(2 * time.Second)
	if _, done, err := a.m.Enter(context.Background(), o); err != nil {
		t.Errorf("Enter after a 2 s jump, renewed within the 6 s deadline: %v", err)
	} else {
		done()
	}
	if err := a.m.Check(o); err != nil {
		t.Errorf("Check after a 2 s jump: %v", err)
	}
	if wctx.Err() != nil {
		t.Errorf("the work's context ended after a 2 s jump")
	}
	a.cut.Store(false)
}

// sameRange reports whether a and b are in the same range of m.
func sameRange(m *shard.Member, a, b client.Object) bool {
	for _, r := range m.Held() {
		if r.Contains(a) {
			return r.Contains(b)
		}
	}
	return false
}
