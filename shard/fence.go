package shard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// ErrFenced is wrapped by the error of work or a write that a [Member]
// refuses because the range's Lease is not confirmed: this replica's own
// clock shows no successful renewal of it within RenewDeadline (a process
// frozen by a long GC pause, a paused VM or a starved node, or cut off from
// the API server), or the range was lost. The range may still be this
// replica's, and is again once a renewal succeeds; or another replica may
// hold it already. Its class is [errors.ClassConflict]: a quiet, short
// retry, which [Guard] turns into a retry after RetryPeriod, dropped if the
// range is gone by then.
var ErrFenced = errors.New("shard: the range's Lease is not confirmed by a renewal within RenewDeadline")

// fencedError says which range was fenced and why. It unwraps to
// ErrFenced.
type fencedError struct {
	rng ranges.Range
	// why completes "range <rng> ...".
	why string
}

func (e *fencedError) Error() string {
	return fmt.Sprintf("%v: range %s %s", ErrFenced, e.rng, e.why)
}

func (e *fencedError) Unwrap() error { return ErrFenced }

// Class is errors.ClassConflict: the object may be another replica's by
// now, or this one's again in a moment; a quiet, short retry finds out.
func (e *fencedError) Class() errors.Class { return errors.ClassConflict }

// term is a stretch of a holding during which its Lease stays confirmed:
// it ends (its context is cancelled) when RenewDeadline passes, by the
// Member's clock, without a successful renewal, or when the holding ends.
// The next renewal starts a new term. Work admitted in a term runs with a
// context that ends with it, and writes only while it lasts.
type term struct {
	ctx    context.Context
	end    context.CancelFunc
	lapsed bool // ended because RenewDeadline passed without a renewal (counted once)
}

// fence is what the context of work admitted by Enter carries: the holding
// and term it was admitted in.
type fence struct {
	m    *Member
	i    int
	term *term
}

type fenceKey struct{}

// check says whether work of f may write now: its term goes on and the
// range's Lease was renewed within RenewDeadline, by the clock, now.
func (f *fence) check() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.m.confirmedLocked(f.i, f.term)
}

// confirmedLocked returns nil when range i is held, its Lease was renewed
// within RenewDeadline by m's clock now, and t (when not nil: the term
// work was admitted in) goes on; else a *fencedError. Called with m.mu
// held.
func (m *Member) confirmedLocked(i int, t *term) error {
	h := m.held[i]
	if h == nil || h.ctx.Err() != nil {
		return &fencedError{rng: m.ranges[i], why: "is not held by this replica"}
	}
	_, rd, _ := m.timings()
	if age := m.Clock.Since(m.renewed[i]); age >= rd {
		return &fencedError{rng: m.ranges[i], why: fmt.Sprintf("was last renewed %s ago (RenewDeadline %s)", age.Round(time.Millisecond), rd)}
	}
	if t != nil && t.ctx.Err() != nil {
		return &fencedError{rng: m.ranges[i], why: "went unrenewed past RenewDeadline after this work was admitted"}
	}
	return nil
}

// Check returns nil when obj's range (by obj's own UID, as [ranges.Of]
// finds it: an object of the kind the ranges split, not a child) is held by
// this replica and its Lease confirmed now: renewed, by this replica's
// clock, within RenewDeadline. Otherwise it returns an error wrapping
// [ErrFenced]. A range being given up is still held: the work draining in
// it may write. It is what a writer that sends later than the work it
// writes for asks just before each write: recorder.Recorder's Fence.
func (m *Member) Check(obj client.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ranges) == 0 {
		return fmt.Errorf("%w: the Member has not started", ErrFenced)
	}
	i, _ := ranges.Of(obj, len(m.ranges))
	if err := m.confirmedLocked(i, nil); err != nil {
		fencedTotal.WithLabelValues(m.Name, "check").Inc()
		return err
	}
	return nil
}

// confirm records that a write renewing range i's Lease in this replica's
// name, sent at sent by m's clock, succeeded: the range is confirmed until
// sent + RenewDeadline. A holding whose term had ended starts a new one.
func (m *Member) confirm(i int, sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.renewed[i]; ok && !sent.After(last) {
		return
	}
	m.renewed[i] = sent
	h := m.held[i]
	if h == nil || h.ctx.Err() != nil || h.term.ctx.Err() == nil {
		return
	}
	if _, rd, _ := m.timings(); m.Clock.Since(sent) >= rd {
		return
	}
	h.term = newTerm(h.ctx)
	select {
	case h.renewal <- struct{}{}:
	default:
	}
}

func newTerm(parent context.Context) *term {
	ctx, cancel := context.WithCancel(parent)
	return &term{ctx: ctx, end: cancel}
}

// keepTerms ends the terms of holding h of range i as RenewDeadline passes
// without a renewal, until the holding ends: the work in them is
// cancelled at once, instead of when leader election's renew loop next
// looks (after a freeze, up to RenewDeadline later).
func (m *Member) keepTerms(h *holding, i int) {
	_, rd, _ := m.timings()
	for {
		left := m.lapse(h, i, rd)
		if left <= 0 {
			select {
			case <-h.ctx.Done():
				return
			case <-h.renewal:
				continue
			}
		}
		timer := m.Clock.NewTimer(left)
		select {
		case <-h.ctx.Done():
			timer.Stop()
			// The holding may end in the same instant as its term
			// lapses (a wake from a freeze fires both): the lapse
			// still counts.
			m.lapse(h, i, rd)
			return
		case <-timer.C():
		}
	}
}

// lapse ends the term of holding h of range i once rd has passed since the
// range's last confirmed renewal, counting it once, and returns the time
// left before it does.
func (m *Member) lapse(h *holding, i int, rd time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	left := rd - m.Clock.Since(m.renewed[i])
	if left <= 0 && !h.term.lapsed {
		h.term.lapsed = true
		h.term.end()
		fencedTotal.WithLabelValues(m.Name, "term").Inc()
	}
	return left
}

// renewals is the Lock of a range's leader election: it records each
// successful write naming this replica the holder, with the time, by the
// Member's clock, at which it was sent (confirm). From the sending, not the
// answer: the answer may come after a freeze that the others counted
// towards the Lease's expiry.
type renewals struct {
	resourcelock.Interface
	m *Member
	i int
}

func (l renewals) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.m.Clock.Now()
	err := l.Interface.Create(ctx, rec)
	if err == nil && rec.HolderIdentity == l.m.Identity {
		l.m.confirm(l.i, sent)
	}
	return err
}

func (l renewals) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.m.Clock.Now()
	err := l.Interface.Update(ctx, rec)
	if err == nil && rec.HolderIdentity == l.m.Identity {
		l.m.confirm(l.i, sent)
	}
	return err
}

// Fence returns a copy of cfg whose clients check each mutating request
// (create, update, patch, delete) made with the context of work a [Member]
// admitted ([Member.Enter], [Guard]) just before it goes out: the request
// is sent only while the work's range is held and its Lease confirmed by a
// renewal within RenewDeadline, by the Member's clock, and fails with an
// error wrapping [ErrFenced] otherwise. Requests made with any other
// context (the Member's own Lease writes, reads) pass unchecked.
//
// Build the manager (and so its client, API reader and event recorders)
// from it, so that every write a reconcile sends, through the library's
// writers or directly, is checked as late as it can be: a reconcile admitted
// before a freeze sends nothing after it for a range it lost.
//
//	mgr, err := ctrl.NewManager(shard.Fence(cfg), ctrl.Options{...})
func Fence(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return checkedTransport{next: rt, check: func(req *http.Request) error {
			f, ok := req.Context().Value(fenceKey{}).(*fence)
			if !ok {
				return nil
			}
			err := f.check()
			if err != nil {
				fencedTotal.WithLabelValues(f.m.Name, "write").Inc()
			}
			return err
		}}
	})
	return out
}

// checkedTransport sends a mutating request only if check passes, just
// before it goes out: rest.Config.Wrap makes it the innermost of a
// client's transports, beneath client-go's own (authentication, user
// agent, retries) and after its rate limiter.
type checkedTransport struct {
	next  http.RoundTripper
	check func(*http.Request) error
}

func (t checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.check(req); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper returns the transport it wraps (client-go's
// net.RoundTripperWrapper).
func (t checkedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
