package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/shard/follow"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// GroupLabel labels every Lease of a [Member]'s group with the group's
// Name: the Leases of its ranges and those of its members. A Member lists
// its group's Leases by this key alone.
//
// v0.4.0 wrote the keys shard.reconcilekit.dev/group and
// shard.reconcilekit.dev/member instead, and v0.5.x both those and these:
// replicas of v0.5.x and of this version see each other's Leases, and a
// replica of v0.4.0 is not seen (upgrade through v0.5.x).
const GroupLabel = "shard.reconcilekit.io/group"

// MemberLabel labels the Lease by which a replica says it is alive, with
// the value "true".
const MemberLabel = "shard.reconcilekit.io/member"

// groupLabels returns the labels of every Lease of m's group: the group,
// and, for a member Lease, the member label.
func (m *Member) groupLabels(member bool) map[string]string {
	l := map[string]string{GroupLabel: m.Name}
	if member {
		l[MemberLabel] = "true"
	}
	return l
}

// isMemberLease reports whether l is a member Lease.
func isMemberLease(l *coordinationv1.Lease) bool {
	return l.Labels[MemberLabel] == "true"
}

// ErrNotHeld is returned by [Member.Enter] for an object whose range this
// replica does not hold (or is giving up).
var ErrNotHeld = errors.New("shard: the object's range is not held by this replica")

// Member is one replica's share of a controller's objects: the hash space
// is split into RangeCount ranges (ranges.Split) and each range is held, by
// exactly one replica at a time, through a Lease of its own, with
// client-go's leader election (the same Lease records, renewals and expiry
// as a manager's leader election). The replicas balance the ranges among
// themselves: each one also keeps a member Lease renewed, counts the live
// members, and holds its share, ceil(RangeCount / members): a joining replica
// takes ranges as the others give up what they hold beyond their share, a
// stopping one gives up all of its ranges at once, and the ranges of one
// that died move when their Leases expire (LeaseDuration).
//
// Fencing: a replica gives up a range only after the work it does in that
// range has ended. Work enters a range with [Member.Enter] (or through
// [Guard]); a range being given up admits no new work, waits up to
// DrainTimeout for the work in it, and only then releases its Lease. A
// replica that cannot renew a range's Lease within RenewDeadline cancels
// the context of the work in that range, before the Lease can expire for
// the others (LeaseDuration is longer than RenewDeadline).
//
// Build one with [NewMember], set Namespace, Name and RangeCount, and run it as
// a manager Runnable (mgr.Add(m)) on every replica: it does not need the
// manager's leader election. A cache that follows the ranges it holds is
// package follow's (follow.CacheOptions takes the Member).
type Member struct {
	// Namespace holds the Leases. Required.
	Namespace string
	// Name names the group of replicas (the controller): range i of n is
	// held through the Lease "<Name>-<i>-of-<n>", and each member keeps a
	// Lease "<Name>-member-<hash of its Identity>". Required.
	Name string
	// Identity names this replica in the Leases; empty means the host
	// name and a random suffix.
	Identity string
	// RangeCount is how many ranges the hash space is split into: the most
	// replicas that can share the work. All replicas must agree on it.
	// Required, at most ranges.Max.
	RangeCount int
	// LeaseDuration, RenewDeadline and RetryPeriod are leader election's
	// timings for every range's Lease; zero means 15 s, 10 s and 2 s, as a
	// manager's. LeaseDuration must be whole seconds and longer than
	// RenewDeadline, itself longer than 1.2 × RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DrainTimeout is how long a range being given up waits for the work
	// in it before it releases its Lease anyway; zero means RenewDeadline.
	DrainTimeout time.Duration
	// OnChange, when set, is called (from one goroutine at a time) with
	// the ranges this replica holds whenever they change.
	OnChange func(held ranges.Set)
	// Clock tells the time of the Member's own rounds and Lease records,
	// and times its waits. Nil means the real clock. (Each range's leader
	// election keeps client-go's own clock.)
	Clock clock.Clock

	// leases reads and writes the Leases, every write under the field
	// manager fieldOwner (both given to NewMember).
	leases     coordinationv1client.LeasesGetter
	fieldOwner string

	ranges []ranges.Range
	// preference is this replica's order of preference among the ranges,
	// and ownLease the name of its member Lease; both set once by Start.
	preference []int
	ownLease   string

	changeMu sync.Mutex // serialises OnChange
	mu       sync.Mutex
	held     map[int]*holding
	electing map[int]*election
	members  map[string]observed // member Lease name -> last change seen
	rangeObs map[string]observed // range Lease name -> last change seen
	// renewed is, by range, when this replica sent the last write of the
	// range's Lease in its own name that succeeded, by Clock (confirm).
	renewed map[int]time.Time
	leaving map[int]chan struct{}
	// departed, set when the Member stops, is closed once its member
	// Lease is deleted (or that failed): a range given up from then on
	// admits no work at once but is released only after it, so that the
	// others no longer count this replica when they see it free.
	departed <-chan struct{}
	started  bool
	acquired []func(context.Context, ranges.Range) // see onAcquire
	// epochs numbers the holdings: each acquisition of a range is a new
	// one, which the caches following m hand over (Holdings).
	epochs uint64
	// watchers are told when the holdings change (Notify).
	watchers map[chan struct{}]bool
}

// NewMember returns a Member whose Lease reads and writes go through
// leases (usually kubernetes.NewForConfigOrDie(cfg).CoordinationV1()), every
// write under the field manager fieldOwner, the operator's name (the one
// its other writes carry). Set Namespace, Name and RangeCount before starting
// it. A Member with an empty fieldOwner does not start: Start returns an
// error wrapping errors.ErrNoFieldOwner.
func NewMember(leases coordinationv1client.LeasesGetter, fieldOwner string) *Member {
	return &Member{leases: leases, fieldOwner: fieldOwner}
}

// holding is a range this replica holds.
type holding struct {
	ctx      context.Context // cancelled when the range is lost or given up
	epoch    uint64          // numbers this holding among m's (from 1)
	draining bool
	inFlight int
	idle     chan struct{} // closed when draining and inFlight reaches 0
	// term is the holding's current stretch of confirmed time (see
	// keepTerms); renewal is told when a renewal starts a new one.
	term    *term
	renewal chan struct{}
}

// election is a running leader election for one range.
type election struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// observed is when this replica last saw a Lease's record change: like
// leader election, a replica judges expiry by its own clock, from when it
// saw the record change, never by the writer's timestamps.
type observed struct {
	record string
	at     time.Time
}

// see records what a replica sees of a Lease now and returns since when
// its record is unchanged.
func see(seen map[string]observed, l *coordinationv1.Lease, now time.Time) time.Time {
	rec := fmt.Sprint(ptr.Deref(l.Spec.HolderIdentity, ""), "/", l.Spec.RenewTime, "/", ptr.Deref(l.Spec.LeaseTransitions, 0))
	o, ok := seen[l.Name]
	if !ok || o.record != rec {
		o = observed{record: rec, at: now}
		seen[l.Name] = o
	}
	return o.at
}

// ErrInvalidMember is what [Member.Validate] returns, wrapped, for a Member
// set wrong.
var ErrInvalidMember = errors.New("shard: invalid Member")

// Validate reports the fields of m set wrong: no Leases client or no field
// owner (a Member not from [NewMember], or from it with a nil client or an
// empty field owner; the error then also wraps errors.ErrNoFieldOwner), no
// Namespace or Name,
// a number of ranges out of bounds, timings leader election refuses. Start
// calls it and returns its error, marked permanent.
func (m *Member) Validate() error {
	var errs []error
	if m.leases == nil {
		errs = append(errs, errors.New("no Leases client: build the Member with shard.NewMember(leases, fieldOwner)"))
	}
	if m.fieldOwner == "" {
		errs = append(errs, fmt.Errorf("%w: build the Member with shard.NewMember(leases, fieldOwner)", errors.ErrNoFieldOwner))
	}
	if m.Namespace == "" || m.Name == "" {
		errs = append(errs, errors.New("Namespace and Name are required"))
	}
	if _, err := ranges.Split(m.RangeCount); err != nil {
		errs = append(errs, err)
	}
	ld, rd, rp := m.timings()
	switch {
	case rp <= 0:
		errs = append(errs, fmt.Errorf("RetryPeriod must be positive, got %s", rp))
	case rd <= time.Duration(1.2*float64(rp)):
		errs = append(errs, fmt.Errorf("RenewDeadline (%s) must be more than 1.2 × RetryPeriod (%s)", rd, rp))
	case ld <= rd:
		errs = append(errs, fmt.Errorf("LeaseDuration (%s) must be more than RenewDeadline (%s)", ld, rd))
	case ld%time.Second != 0:
		errs = append(errs, fmt.Errorf("LeaseDuration must be whole seconds, got %s", ld))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMember, err)
	}
	return nil
}

func (m *Member) timings() (leaseDuration, renewDeadline, retryPeriod time.Duration) {
	leaseDuration, renewDeadline, retryPeriod = m.LeaseDuration, m.RenewDeadline, m.RetryPeriod
	if leaseDuration == 0 {
		leaseDuration = 15 * time.Second
	}
	if renewDeadline == 0 {
		renewDeadline = 10 * time.Second
	}
	if retryPeriod == 0 {
		retryPeriod = 2 * time.Second
	}
	return leaseDuration, renewDeadline, retryPeriod
}

// NeedLeaderElection reports false: every replica runs its Member (for a
// controller-runtime manager).
func (m *Member) NeedLeaderElection() bool { return false }

// Start runs the member until ctx ends: it keeps its member Lease renewed
// and holds its share of the ranges. When ctx ends it gives up every range
// (no new work at once; drained, then released) and deletes its member
// Lease before it releases any, so that the other replicas, which no
// longer count it, take each range in their first round that sees it
// released. A Member starts once; one that [Member.Validate] refuses does
// not start.
func (m *Member) Start(ctx context.Context) error {
	if err := m.Validate(); err != nil {
		return errors.Permanent(err)
	}
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("shard: a Member starts once")
	}
	m.started = true
	m.ranges, _ = ranges.Split(m.RangeCount)
	m.held, m.electing, m.leaving = map[int]*holding{}, map[int]*election{}, map[int]chan struct{}{}
	m.members, m.rangeObs = map[string]observed{}, map[string]observed{}
	m.renewed = map[int]time.Time{}
	if m.Clock == nil {
		m.Clock = clock.RealClock{}
	}
	m.leases = fieldManaged{m.leases, m.fieldOwner}
	if m.Identity == "" {
		host, _ := os.Hostname()
		m.Identity = host + "_" + strconv.FormatUint(rand.Uint64(), 36)
	}
	m.preference = preference(m.Identity, len(m.ranges))
	m.ownLease = fmt.Sprintf("%s-member-%016x", m.Name, hash(m.Identity))
	m.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("shardGroup", m.Name, "identity", m.Identity)
	ctx = log.IntoContext(ctx, logger)

	_, _, retry := m.timings()
	for ctx.Err() == nil {
		// A round every RetryPeriod (jittered), and one at the moment a
		// Lease of another replica expires by this replica's clock, so
		// that a dead replica's ranges move as soon as they may.
		next := m.balance(ctx)
		d := wait.Jitter(retry, 0.2)
		if !next.IsZero() {
			// A little after, so that the round finds it expired.
			d = min(d, max(next.Sub(m.Clock.Now()), 0)+10*time.Millisecond)
		}
		t := m.Clock.NewTimer(d)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}

	// Stopping: every range stops admitting work at once and drains,
	// while the member Lease is deleted; each is released only after
	// that, so that the others count this replica out when they see its
	// ranges free, and take each in their first round that does (not one
	// round later, once the member Lease is gone too).
	departed := make(chan struct{})
	m.mu.Lock()
	m.departed = departed
	var leaving []chan struct{}
	for i := range m.electing {
		leaving = append(leaving, m.leave(context.WithoutCancel(ctx), i))
	}
	for _, done := range m.leaving {
		leaving = append(leaving, done)
	}
	m.mu.Unlock()
	_, rd, _ := m.timings()
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), rd)
	err := m.leases.Leases(m.Namespace).Delete(stop, m.memberLease(), metav1.DeleteOptions{})
	cancel()
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Info("could not delete the member Lease; it expires on its own", "error", err)
	}
	close(departed)
	for _, done := range leaving {
		<-done
	}
	return nil
}

// balance is one round: renew the member Lease, see the group's Leases,
// and take or give up ranges towards this replica's share. It returns when
// the first Lease of another replica (a range's or a member's) expires, by
// this replica's clock (zero if none does).
func (m *Member) balance(ctx context.Context) (nextExpiry time.Time) {
	logger := log.FromContext(ctx)
	if err := m.renewMember(ctx); err != nil {
		logger.Info("could not renew the member Lease", "error", err)
	}
	leases, err := m.groupLeases(ctx)
	if err != nil {
		logger.Info("could not list the group's Leases", "error", err)
		return time.Time{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.observe(leases)
	share := (len(m.ranges) + g.live - 1) / g.live
	mine, trying := m.claims()
	m.giveUpBeyond(ctx, mine, share, g.live)
	active := m.stopTrying(ctx, trying, g.taken, min(len(mine), share), share)
	takeOver, want := m.tryFree(ctx, g, share-min(len(mine), share)-active)
	if want > 0 && len(takeOver) > 0 {
		// Taking over writes to the API server: not while holding m.mu,
		// which every Enter and Contains takes.
		m.mu.Unlock()
		won := m.takeOverSome(ctx, takeOver, g.expired, want)
		m.mu.Lock()
		for _, i := range won {
			if m.electing[i] == nil && m.leaving[i] == nil {
				m.elect(ctx, i)
			}
		}
	}
	return g.nextExpiry
}

// groupLeases lists the group's Leases, by GroupLabel.
func (m *Member) groupLeases(ctx context.Context) ([]coordinationv1.Lease, error) {
	list, err := m.leases.Leases(m.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + m.Name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// group is what one round saw of the group's Leases, by this replica's
// clock.
type group struct {
	live       int                           // members alive, this one included
	taken      map[int]bool                  // ranges another replica holds
	expired    map[int]*coordinationv1.Lease // ranges whose holder let them expire
	nextExpiry time.Time                     // when the first Lease of another replica expires
}

// observe reads the group's Leases: the live members, and which ranges
// are taken or expired. Called with m.mu held.
func (m *Member) observe(leases []coordinationv1.Lease) group {
	now := m.Clock.Now()
	ld, _, _ := m.timings()
	g := group{taken: map[int]bool{}, expired: map[int]*coordinationv1.Lease{}}
	expires := func(since time.Time) {
		if at := since.Add(ld); g.nextExpiry.IsZero() || at.Before(g.nextExpiry) {
			g.nextExpiry = at
		}
	}
	seen := map[string]bool{}
	for i := range leases {
		l := &leases[i]
		seen[l.Name] = true
		idx, isRange := m.rangeIndex(l.Name)
		switch {
		case isMemberLease(l) && l.Name == m.memberLease():
			g.live++
		case isMemberLease(l):
			// A member whose Lease expires changes the share: a round then.
			if since := see(m.members, l, now); now.Sub(since) < ld {
				g.live++
				expires(since)
			}
		case isRange:
			// A Lease naming this replica is its own: held, being acquired,
			// or left from an earlier run under the same identity (its
			// election renews it at once).
			since := see(m.rangeObs, l, now)
			switch holder := ptr.Deref(l.Spec.HolderIdentity, ""); {
			case holder == "" || holder == m.Identity:
			case now.Sub(since) >= ld:
				g.expired[idx] = l
			default:
				g.taken[idx] = true
				expires(since)
			}
		}
	}
	for _, obs := range []map[string]observed{m.members, m.rangeObs} {
		for name := range obs {
			if !seen[name] {
				delete(obs, name)
			}
		}
	}
	if !seen[m.memberLease()] {
		g.live++ // our own, not listed yet
	}
	return g
}

// claims returns the ranges this replica holds and those it is trying
// for (neither being given up), in order. Called with m.mu held.
func (m *Member) claims() (mine, trying []int) {
	for i := range m.electing {
		switch {
		case m.leaving[i] != nil:
		case m.held[i] != nil:
			mine = append(mine, i)
		default:
			trying = append(trying, i)
		}
	}
	sort.Ints(mine)
	sort.Ints(trying)
	return mine, trying
}

// giveUpBeyond gives up what this replica holds beyond its share. Called
// with m.mu held.
func (m *Member) giveUpBeyond(ctx context.Context, mine []int, share, live int) {
	for _, i := range mine[min(len(mine), share):] {
		log.FromContext(ctx).Info("giving up a range beyond this replica's share", "range", m.ranges[i].String(), "members", live, "share", share)
		m.leave(ctx, i)
	}
}

// stopTrying stops trying for ranges another replica holds, or beyond the
// share, and returns how many tries go on. Called with m.mu held.
func (m *Member) stopTrying(ctx context.Context, trying []int, taken map[int]bool, held, share int) (active int) {
	for _, i := range trying {
		if taken[i] || held+active >= share {
			m.leave(ctx, i)
			continue
		}
		active++
	}
	return active
}

// tryFree tries for up to want free ranges, in this replica's own order of
// preference, so that replicas try for different ranges, and returns, in
// the same order, the expired ones to take over, and how many ranges it
// still wants. Called with m.mu held.
func (m *Member) tryFree(ctx context.Context, g group, want int) (takeOver []int, left int) {
	for _, i := range m.preference {
		switch {
		case m.electing[i] != nil || m.leaving[i] != nil || g.taken[i]:
		case g.expired[i] != nil:
			takeOver = append(takeOver, i)
		case want > 0:
			m.elect(ctx, i)
			want--
		}
	}
	return takeOver, want
}

// takeOverSome takes over expired ranges, in order, until want are won
// (another replica may win one first), and returns those won. Called
// without m.mu.
func (m *Member) takeOverSome(ctx context.Context, takeOver []int, expired map[int]*coordinationv1.Lease, want int) (won []int) {
	for _, i := range takeOver {
		if len(won) == want {
			break
		}
		if m.takeOver(ctx, i, expired[i]) {
			won = append(won, i)
		}
	}
	return won
}

// takeOver makes this replica the holder of range i's expired Lease l (one
// this replica has seen unchanged for a lease duration), with the Lease's
// resourceVersion as the guard against another replica doing the same, so
// that its leader election renews it at once instead of observing it for
// another lease duration. Called without m.mu.
func (m *Member) takeOver(ctx context.Context, i int, l *coordinationv1.Lease) bool {
	now := metav1.NewMicroTime(m.Clock.Now())
	next := l.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, m.groupLabels(false))
	next.Spec.HolderIdentity = ptr.To(m.Identity)
	next.Spec.AcquireTime, next.Spec.RenewTime = &now, &now
	next.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	ld, _, _ := m.timings()
	next.Spec.LeaseDurationSeconds = ptr.To(int32(ld / time.Second))
	sent := m.Clock.Now()
	if _, err := m.leases.Leases(m.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		log.FromContext(ctx).V(1).Info("could not take over an expired range Lease", "range", m.ranges[i].String(), "error", err)
		return false
	}
	m.confirm(i, sent)
	log.FromContext(ctx).Info("took over an expired range Lease", "range", m.ranges[i].String(), "previousHolder", ptr.Deref(l.Spec.HolderIdentity, ""))
	return true
}

// rangeIndex returns the index of the range whose Lease is named name.
func (m *Member) rangeIndex(name string) (int, bool) {
	var i, n int
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, m.Name+"-"), "%d-of-%d", &i, &n); err != nil || n != len(m.ranges) || i < 0 || i >= n {
		return 0, false
	}
	return i, m.rangeLease(i) == name
}

// preference orders n ranges by a hash of identity and the range's index,
// so that replicas try for different free ranges.
func preference(identity string, n int) []int {
	order := make([]int, n)
	keys := make([]uint64, n)
	for i := range order {
		order[i] = i
		keys[i] = hash(identity + "/" + strconv.Itoa(i))
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	return order
}

// elect starts leader election for range i. Called with m.mu held.
func (m *Member) elect(ctx context.Context, i int) {
	ld, rd, rp := m.timings()
	// Only leave stops an election: stopping the Member drains and
	// releases each range first.
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &election{cancel: cancel, done: make(chan struct{})}
	m.electing[i] = e
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          renewals{m.lock(i), m, i},
		LeaseDuration: ld,
		RenewDeadline: rd,
		RetryPeriod:   rp,
		// Released by leave, once the range's work has drained: on a
		// failed renewal the Lease is left to expire.
		ReleaseOnCancel: false,
		Name:            m.rangeLease(i),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { m.acquire(lctx, i) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		cancel()
		close(e.done)
		delete(m.electing, i)
		log.FromContext(ctx).Error(err, "cannot elect for a range", "range", i)
		return
	}
	go func() {
		defer close(e.done)
		le.Run(ectx)
		m.lose(i)
		m.mu.Lock()
		if m.electing[i] == e {
			delete(m.electing, i)
		}
		m.mu.Unlock()
	}()
}

// acquire records that range i is held, until ctx ends.
func (m *Member) acquire(ctx context.Context, i int) {
	m.mu.Lock()
	m.epochs++
	h := &holding{ctx: ctx, epoch: m.epochs, term: newTerm(ctx), renewal: make(chan struct{}, 1)}
	if m.leaving[i] != nil {
		// Acquired while being given up: it admits no work, and leave
		// releases it.
		h.draining, h.idle = true, make(chan struct{})
		close(h.idle)
	}
	m.held[i] = h
	m.notify()
	hooks := slices.Clone(m.acquired)
	m.mu.Unlock()
	go m.keepTerms(h, i)
	if h.draining {
		return
	}
	log.FromContext(ctx).Info("holding a range", "range", m.ranges[i].String())
	m.changed()
	for _, f := range hooks {
		f(ctx, m.ranges[i])
	}
}

// lose records that range i is no longer held.
func (m *Member) lose(i int) {
	m.mu.Lock()
	h := m.held[i]
	delete(m.held, i)
	m.notify()
	m.mu.Unlock()
	if h != nil {
		m.changed()
	}
}

// leave starts giving up range i (held, or being tried for): no new work
// enters it at once; in the background, the work in it drains (up to
// DrainTimeout), the election stops, and the Lease is released. It returns
// a channel closed when that is done. Called with m.mu held.
func (m *Member) leave(ctx context.Context, i int) chan struct{} {
	if done := m.leaving[i]; done != nil {
		return done
	}
	done := make(chan struct{})
	e := m.electing[i]
	if e == nil {
		close(done)
		return done
	}
	m.leaving[i] = done
	departed := m.departed
	h := m.held[i]
	if h != nil && !h.draining {
		h.draining = true
		h.idle = make(chan struct{})
		if h.inFlight == 0 {
			close(h.idle)
		}
	}
	go func() {
		defer func() {
			m.mu.Lock()
			delete(m.leaving, i)
			m.mu.Unlock()
			close(done)
		}()
		if h != nil {
			m.changed()
			_, rd, _ := m.timings()
			drain := m.DrainTimeout
			if drain <= 0 {
				drain = rd
			}
			select {
			case <-h.idle:
			case <-m.Clock.After(drain):
				log.FromContext(ctx).Info("releasing a range whose work did not drain in time; its work's contexts are cancelled",
					"range", m.ranges[i].String(), "drainTimeout", drain)
			}
		}
		if departed != nil {
			<-departed
		}
		e.cancel()
		<-e.done
		// Released even if it was acquired after leave began: release
		// writes only a Lease that names this replica.
		_, rd, _ := m.timings()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rd)
		defer cancel()
		// A renewal the election sent before it stopped may land after
		// release read the Lease: read it again and retry.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return m.release(rctx, i) }); err != nil {
			log.FromContext(ctx).Info("could not release a range's Lease; it expires on its own", "range", m.ranges[i].String(), "error", err)
		}
	}()
	return done
}

// release empties the holder of range i's Lease if this replica holds it,
// as leader election's ReleaseOnCancel does.
func (m *Member) release(ctx context.Context, i int) error {
	lock := m.lock(i)
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return err
	}
	if rec.HolderIdentity != m.Identity {
		return nil
	}
	now := metav1.NewTime(m.Clock.Now())
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	})
}

// renewMember creates or renews this replica's member Lease.
func (m *Member) renewMember(ctx context.Context) error {
	ld, _, _ := m.timings()
	now := metav1.NewMicroTime(m.Clock.Now())
	leases := m.leases.Leases(m.Namespace)
	l, err := leases.Get(ctx, m.memberLease(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: m.memberLease(), Namespace: m.Namespace,
				Labels: m.groupLabels(true)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(m.Identity), RenewTime: &now, AcquireTime: &now,
				LeaseDurationSeconds: ptr.To(int32(ld / time.Second))},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	maps.Copy(l.Labels, m.groupLabels(true))
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func (m *Member) lock(i int) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: m.rangeLease(i), Namespace: m.Namespace},
		Client:     m.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: m.Identity},
		Labels:     m.groupLabels(false),
	}
}

func (m *Member) rangeLease(i int) string {
	return fmt.Sprintf("%s-%d-of-%d", m.Name, i, len(m.ranges))
}

func (m *Member) memberLease() string { return m.ownLease }

func (m *Member) changed() {
	rangesHeld.WithLabelValues(m.Name).Set(float64(len(m.Held())))
	if m.OnChange != nil {
		m.changeMu.Lock()
		defer m.changeMu.Unlock()
		m.OnChange(m.Held())
	}
}

// Held returns the ranges this replica holds and admits work in (not
// those it is giving up), in order.
func (m *Member) Held() ranges.Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out ranges.Set
	for i, r := range m.ranges {
		if h := m.held[i]; h != nil && !h.draining && h.ctx.Err() == nil {
			out = append(out, r)
		}
	}
	return out
}

// Contains reports whether obj is in a range this replica holds and
// admits work in: a Member is a ranges.Selection, for ranges.Predicate. It
// does not ask whether the range's Lease is confirmed now (see Enter): an
// event of a range whose Lease is renewed again a moment later is not
// dropped.
func (m *Member) Contains(obj client.Object) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, h := m.admitting(obj)
	return h != nil
}

// admitting returns obj's range and, if it admits work, its holding.
// Called with m.mu held.
func (m *Member) admitting(obj client.Object) (int, *holding) {
	if len(m.ranges) == 0 {
		return 0, nil
	}
	i, _ := ranges.Of(obj, len(m.ranges))
	h := m.held[i]
	if h == nil || h.draining || h.ctx.Err() != nil {
		return i, nil
	}
	return i, h
}

// Enter admits work on obj if this replica holds obj's range and the
// range's Lease is confirmed: renewed, by this replica's clock, within
// RenewDeadline. It returns a context and done, which the work must call
// when it ends (a range is released only after every done of its work, or
// DrainTimeout). The context ends with ctx, when the range is lost, and
// when RenewDeadline passes without a renewal of its Lease (the work's
// term ends, see below); it carries the work's fence, which the clients of
// a config from [Fence] check before each write.
//
// For an object of a range this replica does not hold, or is giving up,
// Enter returns ErrNotHeld. For one of a range it holds whose Lease is not
// confirmed now, it returns an error wrapping [ErrFenced]: a process that
// wakes from a freeze (a GC pause, a paused VM) finds every range it had
// not renewed within RenewDeadline fenced at once, before its timers and
// leader election's renew loop catch up, until a renewal succeeds; the
// others may have taken the range meanwhile. Work admitted before such a
// gap writes nothing after it, even once the range is confirmed again: its
// term is over.
func (m *Member) Enter(ctx context.Context, obj client.Object) (context.Context, func(), error) {
	m.mu.Lock()
	i, h := m.admitting(obj)
	if h == nil {
		m.mu.Unlock()
		return ctx, func() {}, ErrNotHeld
	}
	if err := m.confirmedLocked(i, h.term); err != nil {
		m.mu.Unlock()
		fencedTotal.WithLabelValues(m.Name, "enter").Inc()
		return ctx, func() {}, err
	}
	h.inFlight++
	t := h.term
	m.mu.Unlock()
	wctx, cancel := context.WithCancel(context.WithValue(ctx, fenceKey{}, &fence{m: m, i: i, term: t}))
	stop := context.AfterFunc(t.ctx, cancel)
	var once sync.Once
	return wctx, func() {
		once.Do(func() {
			stop()
			cancel()
			m.mu.Lock()
			h.inFlight--
			if h.draining && h.inFlight == 0 {
				close(h.idle)
			}
			m.mu.Unlock()
		})
	}, nil
}

// onAcquire registers f to be called with each range this replica
// acquires, after it is held, and a context that ends when the range is
// lost or given up.
func (m *Member) onAcquire(f func(context.Context, ranges.Range)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquired = append(m.acquired, f)
}

// hash is the 64-bit FNV-1a hash of s: a replica's order of preference
// among the ranges, and its member Lease's name.
func hash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// Holdings returns, by range index, this replica's holding of each range
// its caches hold (those it holds, draining ones included: their work may
// still read them), and 0 for the others: a number that a range gets anew
// each time the replica acquires it, so that a range lost and acquired
// again, however quickly, is another holding, whose objects a following
// cache hands over again (follow.Holder). Its length is RangeCount.
func (m *Member) Holdings() []uint64 {
	out := make([]uint64, max(m.RangeCount, 0))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range m.held {
		if i < len(out) {
			out[i] = h.epoch
		}
	}
	return out
}

// Notify returns a channel that receives a value whenever Holdings may
// have changed, and a function that stops it (follow.Holder).
func (m *Member) Notify() (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	if m.watchers == nil {
		m.watchers = map[chan struct{}]bool{}
	}
	m.watchers[ch] = true
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	}
}

// Group returns Name, the group's name in the metrics (follow.Holder).
func (m *Member) Group() string { return m.Name }

// notify tells the watchers that the holdings changed. Called with m.mu
// held.
func (m *Member) notify() {
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

var _ follow.Holder = (*Member)(nil)

// fieldManaged sends every Lease write with a field manager: the
// operator's name, under which the API server records the fields it set.
type fieldManaged struct {
	coordinationv1client.LeasesGetter
	owner string
}

func (f fieldManaged) Leases(ns string) coordinationv1client.LeaseInterface {
	return fieldManagedLease{f.LeasesGetter.Leases(ns), f.owner}
}

type fieldManagedLease struct {
	coordinationv1client.LeaseInterface
	owner string
}

func (l fieldManagedLease) Create(ctx context.Context, lease *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	o.FieldManager = l.owner
	return l.LeaseInterface.Create(ctx, lease, o)
}

func (l fieldManagedLease) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	o.FieldManager = l.owner
	return l.LeaseInterface.Update(ctx, lease, o)
}

func (l fieldManagedLease) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*coordinationv1.Lease, error) {
	o.FieldManager = l.owner
	return l.LeaseInterface.Patch(ctx, name, pt, data, o, sub...)
}

func (l fieldManagedLease) Apply(ctx context.Context, lease *coordinationv1ac.LeaseApplyConfiguration, o metav1.ApplyOptions) (*coordinationv1.Lease, error) {
	o.FieldManager = l.owner
	return l.LeaseInterface.Apply(ctx, lease, o)
}
