package shard

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Leader fences the writes of a process elected leader through a Lease,
// with client-go's leader election underneath (controller-runtime's
// manager's, say), as a [Member] fences the work of its ranges: the
// process writes only while its own clock shows a successful renewal of
// the Lease, in its name, sent within RenewDeadline. A leader frozen past
// its lease (a GC pause, a paused VM) wakes with its writes refused at
// once, instead of writing until leader election's renew loop, which the
// freeze stopped too, times out up to RenewDeadline later.
//
// A Leader is the resource lock of the election: it wraps lock, recording
// each write that renews or acquires the Lease in lock's identity, and
// passes every call on. Give it to the manager, and build the manager from
// [Leader.Fence] of the config:
//
//	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock,
//		namespace, "widgets-controller", resourcelock.ResourceLockConfig{Identity: id}, cfg, renewDeadline)
//	leader := shard.NewLeader(lock, renewDeadline)
//	mgr, err := ctrl.NewManager(leader.Fence(cfg), ctrl.Options{
//		LeaderElection: true, LeaderElectionResourceLockInterface: leader,
//		RenewDeadline: &renewDeadline, ...})
//
// The lock's own client must not be built from the fenced config: its
// renewals are what confirm the lease.
type Leader struct {
	// Clock tells when the renewals were sent and how long ago. Nil means
	// the real clock.
	Clock clock.PassiveClock

	lock          resourcelock.Interface
	renewDeadline time.Duration

	mu      sync.Mutex
	renewed time.Time // zero until the first renewal
}

// NewLeader returns the Leader fence of an election through lock, whose
// renewals confirm the lease for renewDeadline each: the election's own
// RenewDeadline (controller-runtime's default is 10 s), shorter than its
// lease duration.
func NewLeader(lock resourcelock.Interface, renewDeadline time.Duration) *Leader {
	return &Leader{lock: lock, renewDeadline: renewDeadline}
}

var _ resourcelock.Interface = (*Leader)(nil)

// ErrInvalidLeader is wrapped by what [Leader.Validate] returns.
var ErrInvalidLeader = errors.New("shard: invalid Leader")

// Validate reports a Leader set wrong: no lock, or a renew deadline that
// is not positive. Its writes are then all refused, with this error,
// marked permanent.
func (l *Leader) Validate() error {
	switch {
	case l == nil || l.lock == nil:
		return fmt.Errorf("%w: no resource lock: build it with NewLeader", ErrInvalidLeader)
	case l.renewDeadline <= 0:
		return fmt.Errorf("%w: the renew deadline must be positive, got %s", ErrInvalidLeader, l.renewDeadline)
	}
	return nil
}

func (l *Leader) clock() clock.PassiveClock {
	if l.Clock == nil {
		return clock.RealClock{}
	}
	return l.Clock
}

// Get passes on to the lock.
func (l *Leader) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return l.lock.Get(ctx)
}

// Create passes on to the lock, and records a success that names this
// process the holder.
func (l *Leader) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.clock().Now()
	err := l.lock.Create(ctx, rec)
	l.record(err, rec, sent)
	return err
}

// Update passes on to the lock, and records a success that names this
// process the holder.
//
// A release (a record with no holder, leader election's ReleaseOnCancel)
// goes out only if the Lease, read again just before, names this process:
// otherwise Update sends nothing and returns an error wrapping
// [ErrFenced]. client-go releases when its own last observation names this
// process, and a leader frozen past its lease wakes still believing that:
// its release would empty the Lease a new leader holds, which then writes
// with no holder on record, and a third candidate may take the Lease while
// it still writes. The read also sets the version the release is sent at,
// so that a write to the Lease between the two conflicts.
func (l *Leader) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		cur, _, err := l.lock.Get(ctx)
		if err != nil {
			return err
		}
		if cur.HolderIdentity != l.lock.Identity() {
			fencedTotal.WithLabelValues(l.lock.Describe(), "release").Inc()
			return fmt.Errorf("%w: not releasing %s: it is held by %q, not %q", ErrFenced, l.lock.Describe(), cur.HolderIdentity, l.lock.Identity())
		}
	}
	sent := l.clock().Now()
	err := l.lock.Update(ctx, rec)
	l.record(err, rec, sent)
	return err
}

func (l *Leader) record(err error, rec resourcelock.LeaderElectionRecord, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
	case rec.HolderIdentity != l.lock.Identity():
		// Released (an empty holder): no longer ours, at once.
		l.renewed = time.Time{}
	case sent.After(l.renewed):
		l.renewed = sent
	}
}

// RecordEvent passes on to the lock.
func (l *Leader) RecordEvent(s string) { l.lock.RecordEvent(s) }

// Identity passes on to the lock.
func (l *Leader) Identity() string { return l.lock.Identity() }

// Describe passes on to the lock.
func (l *Leader) Describe() string { return l.lock.Describe() }

// Check returns nil while this process holds the lease, confirmed by a
// renewal sent within the renew deadline, by l's clock; otherwise an error
// wrapping [ErrFenced] (or, for a Leader set wrong, ErrInvalidLeader,
// permanent).
func (l *Leader) Check() error {
	if err := l.Validate(); err != nil {
		return errors.Permanent(err)
	}
	l.mu.Lock()
	renewed := l.renewed
	l.mu.Unlock()
	if renewed.IsZero() {
		return fmt.Errorf("%w: %s is not the leader", ErrFenced, l.lock.Describe())
	}
	if age := l.clock().Since(renewed); age >= l.renewDeadline {
		return fmt.Errorf("%w: %s was last renewed %s ago (renew deadline %s)", ErrFenced, l.lock.Describe(), age.Round(time.Millisecond), l.renewDeadline)
	}
	return nil
}

// Fence returns a copy of cfg whose clients send a mutating request
// (create, update, patch, delete) only while [Leader.Check] passes, just
// before it goes out, and fail it with Check's error otherwise: every
// write of the process, whatever its context, since only a leader writes.
// Reads pass. Build the manager from it, and the election's lock from cfg.
func (l *Leader) Fence(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return checkedTransport{next: rt, check: func(*http.Request) error {
			err := l.Check()
			if err != nil {
				fencedTotal.WithLabelValues(l.lock.Describe(), "write").Inc()
			}
			return err
		}}
	})
	return out
}
