package bench_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// How a holding of a Lease ended.
const (
	// endReleased: the holder wrote the Lease with no holder.
	endReleased = "released"
	// endExpired: the holder's last renewal plus the lease duration it
	// wrote passed (another user may take it over later, never sooner).
	endExpired = "expired"
	// endTakenOver: another user made itself holder while the holder's
	// lease still ran, which leader election must never do.
	endTakenOver = "taken over"
)

// holding is one user's hold of one Lease, reconstructed from the Lease
// writes the audit log carries (level Request: the Lease sent, with its
// holder).
type holding struct {
	lease, user string
	// from is when the server received the write that made user the
	// holder; to is when it received the user's release or another user's
	// takeover, or the user's last renewal plus the lease duration it
	// wrote, whichever came first.
	from, to time.Time
	// lastWrite is when the server received the user's last write that
	// named it holder (the acquiring write or a renewal).
	lastWrite time.Time
	// end says how the holding ended.
	end string
}

// contains reports whether t falls in the holding.
func (h holding) contains(t time.Time) bool { return !t.Before(h.from) && !t.After(h.to) }

// holdings reconstructs who held each Lease when, from the accepted writes
// among reqs of the Leases named in leases (other requests are skipped),
// taken in the order the server received them. An accepted write of a
// Lease is based on the resourceVersion of the one before it, so that is
// the order the Leases went through. A write that names a holder makes its
// user the holder from its receipt, or renews the user's hold (until the
// receipt plus the leaseDurationSeconds it wrote); a write that names none
// releases it. Another user may take the Lease over once the lease has run
// out as the other candidates see it: client-go's leader election compares
// the Lease as a record whose times are whole seconds, and starts a
// candidate's wait only when that record changes, so a renewal whose
// renewTime falls in the same second as the one before renews nothing the
// others see, and the lease they wait out runs from the first renewal of
// the second. The holding itself runs until the user's last renewal plus
// the lease duration, or until another user takes the Lease, whichever
// comes first: a write received until then overlaps no other holder's. It also returns what breaks the rules of leader election: a
// user naming another user's identity (or two identities), one user
// releasing another's hold, another user taking a Lease over before the
// holder's lease ran out. A holding still running at the last write ends
// as its lease would (endExpired).
func holdings(reqs []bench.AuditRequest, leases func(name string) bool) ([]holding, []string) {
	var writes []bench.AuditRequest
	for _, r := range reqs {
		if r.Holder != nil && r.Accepted() && r.Write() && leases(r.Name) {
			writes = append(writes, r)
		}
	}
	slices.SortStableFunc(writes, func(a, b bench.AuditRequest) int { return a.Received.Compare(b.Received) })
	var broken []string
	identity := map[string]string{} // user -> the identity it writes
	userOf := map[string]string{}   // identity -> user
	type state struct {
		h holding
		// heldUntil is the last renewal's receipt plus the lease
		// duration; validUntil the same for the first renewal of the
		// record the others see, when their wait for the lease started.
		heldUntil, validUntil time.Time
		// renewed is the whole second of the renewTime last written, as
		// the other candidates see it (zero when the write had none).
		renewed time.Time
	}
	second := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Truncate(time.Second)
	}
	open := map[string]*state{}
	var hs []holding
	closeAt := func(lease string, at time.Time, end string) {
		s := open[lease]
		s.h.to, s.h.end = at, end
		hs = append(hs, s.h)
		delete(open, lease)
	}
	for _, w := range writes {
		holder := *w.Holder
		if holder != "" {
			if id, ok := identity[w.User]; ok && id != holder {
				broken = append(broken, fmt.Sprintf("%s named %q holder of %s at %s, having named %q before", w.User, holder, w.Name, stamp(w.Received), id))
			}
			if u, ok := userOf[holder]; ok && u != w.User {
				broken = append(broken, fmt.Sprintf("%s named %q (%s's identity) holder of %s at %s", w.User, holder, u, w.Name, stamp(w.Received)))
			}
			identity[w.User], userOf[holder] = holder, w.User
		}
		s := open[w.Name]
		if s != nil && w.Received.After(s.heldUntil) {
			closeAt(w.Name, s.heldUntil, endExpired)
			s = nil
		}
		if s != nil && s.h.user != w.User && w.Received.After(s.validUntil) {
			// Run out as the others see it: taken over or released
			// now, as leader election allows.
			closeAt(w.Name, w.Received, endExpired)
			s = nil
		}
		switch {
		case holder == "" && s == nil:
			// Nothing held (a release after the lease ran out, or of a
			// Lease created without a holder).
		case holder == "" && s.h.user == w.User:
			closeAt(w.Name, w.Received, endReleased)
		case holder == "":
			broken = append(broken, fmt.Sprintf("%s released %s at %s, held by %s until %s", w.User, w.Name, stamp(w.Received), s.h.user, stamp(s.validUntil)))
			closeAt(w.Name, w.Received, endReleased)
		case s != nil && s.h.user == w.User:
			s.h.lastWrite, s.heldUntil = w.Received, w.Received.Add(w.LeaseDuration)
			if r := second(w.RenewTime); r.IsZero() || !r.Equal(s.renewed) {
				s.validUntil, s.renewed = s.heldUntil, r
			}
		default:
			if s != nil {
				broken = append(broken, fmt.Sprintf("%s took %s over at %s, held by %s until %s", w.User, w.Name, stamp(w.Received), s.h.user, stamp(s.validUntil)))
				closeAt(w.Name, w.Received, endTakenOver)
			}
			until := w.Received.Add(w.LeaseDuration)
			open[w.Name] = &state{h: holding{lease: w.Name, user: w.User, from: w.Received, lastWrite: w.Received},
				heldUntil: until, validUntil: until, renewed: second(w.RenewTime)}
		}
	}
	for _, lease := range sortedKeys(open) {
		closeAt(lease, open[lease].heldUntil, endExpired)
	}
	slices.SortStableFunc(hs, func(a, b holding) int { return a.from.Compare(b.from) })
	return hs, broken
}

// heldBy returns the holding of lease by user that contains t, if any.
func heldBy(hs []holding, lease, user string, t time.Time) (holding, bool) {
	for _, h := range hs {
		if h.lease == lease && h.user == user && h.contains(t) {
			return h, true
		}
	}
	return holding{}, false
}

// handover is how the Leases user held at t passed to other users.
type handover struct {
	// leases are the Leases user held at t, or acquired after t.
	leases []string
	// ends says how each of user's holdings of them ended.
	ends map[string]string
	// after is how long after t the last of them was held by another
	// user; taken says whether every one of them was.
	after time.Duration
	taken bool
}

// handoverAfter finds how the Leases user held at t (or came to hold after
// t) passed to other users: when each was first held by another user after
// user's holding of it ended.
func handoverAfter(hs []holding, user string, t time.Time) handover {
	ho := handover{ends: map[string]string{}, taken: true}
	last := map[string]holding{}
	for _, h := range hs {
		if h.user == user && h.to.After(t) {
			if _, ok := last[h.lease]; !ok {
				ho.leases = append(ho.leases, h.lease)
			}
			last[h.lease] = h
			ho.ends[h.lease] = h.end
		}
	}
	slices.Sort(ho.leases)
	for _, lease := range ho.leases {
		found := false
		for _, h := range hs {
			if h.lease == lease && h.user != user && !h.from.Before(last[lease].to) {
				ho.after = max(ho.after, h.from.Sub(t))
				found = true
				break
			}
		}
		ho.taken = ho.taken && found
	}
	return ho
}

// roundsToTake returns, over the Leases user held past t, the most
// balancing rounds (renewals: each user's member Lease renewals, in order)
// that the next holder of a Lease ran after user's holding of it ended and
// until it took it: 1 when taken in the first round that could see it
// free. A Lease nobody took counts as -1.
func roundsToTake(hs []holding, user string, t time.Time, renewals map[string][]time.Time) int {
	most := 0
	ho := handoverAfter(hs, user, t)
	for _, lease := range ho.leases {
		var ended time.Time
		for _, h := range hs {
			if h.lease == lease && h.user == user && h.to.After(t) {
				ended = h.to
			}
		}
		n := -1
		for _, h := range hs {
			if h.lease != lease || h.user == user || h.from.Before(ended) {
				continue
			}
			n = 0
			for _, r := range renewals[h.user] {
				if r.After(ended) && !r.After(h.from) {
					n++
				}
			}
			break
		}
		if n < 0 {
			return -1
		}
		most = max(most, n)
	}
	return most
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestHoldingsFollowTheLeaseWrites(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const lease = "at-0-of-6"
	// write is an accepted update of lease by user, naming holder, for a
	// 4 s lease.
	write := func(user, holder string, s float64) bench.AuditRequest {
		return bench.AuditRequest{User: user, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: lease,
			Code: 200, Received: at(s), Holder: &holder, LeaseDuration: 4 * time.Second}
	}
	// renewed sets the renewTime w sent, s seconds after 12:00.
	renewed := func(w bench.AuditRequest, s float64) bench.AuditRequest {
		w.RenewTime = at(s)
		return w
	}
	refused := write("b", "id-b", 1.5)
	refused.Code = 409
	other := write("b", "id-b", 1.5)
	other.Name = "at-member-1234"
	tests := []struct {
		name       string
		reqs       []bench.AuditRequest
		want       []holding
		wantBroken []string
	}{
		{
			name: "acquired, renewed, released, acquired by another",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "id-a", 1), write("a", "", 2), write("b", "id-b", 2.5)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(2), lastWrite: at(1), end: endReleased},
				{lease: lease, user: "b", from: at(2.5), to: at(6.5), lastWrite: at(2.5), end: endExpired},
			},
		},
		{
			name: "a holder that stops renewing holds until its last renewal plus the lease duration",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "id-a", 1), write("b", "id-b", 5.5)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(5), lastWrite: at(1), end: endExpired},
				{lease: lease, user: "b", from: at(5.5), to: at(9.5), lastWrite: at(5.5), end: endExpired},
			},
		},
		{
			name: "a renewal in the same second as the one before renews nothing the others see: another may take the Lease 4 s after the first",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), renewed(write("a", "id-a", 1.1), 1.05), renewed(write("a", "id-a", 1.6), 1.55), write("b", "id-b", 5.2)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(5.2), lastWrite: at(1.6), end: endExpired},
				{lease: lease, user: "b", from: at(5.2), to: at(9.2), lastWrite: at(5.2), end: endExpired},
			},
		},
		{
			name: "a renewal in the next second renews the hold",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), renewed(write("a", "id-a", 1.1), 1.05), renewed(write("a", "id-a", 2.1), 2.05), write("b", "id-b", 5.2)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(5.2), lastWrite: at(2.1), end: endTakenOver},
				{lease: lease, user: "b", from: at(5.2), to: at(9.2), lastWrite: at(5.2), end: endExpired},
			},
			wantBroken: []string{"b took at-0-of-6 over at 12:00:05.200000, held by a until 12:00:06.100000"},
		},
		{
			name: "a renewal after the lease ran out starts a new holding",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "id-a", 5)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(4), lastWrite: at(0), end: endExpired},
				{lease: lease, user: "a", from: at(5), to: at(9), lastWrite: at(5), end: endExpired},
			},
		},
		{
			name: "writes out of order are taken in the order received; refused writes and other Leases are skipped",
			reqs: []bench.AuditRequest{write("a", "id-a", 1), refused, other, write("a", "id-a", 0)},
			want: []holding{{lease: lease, user: "a", from: at(0), to: at(5), lastWrite: at(1), end: endExpired}},
		},
		{
			name: "a release after the lease ran out releases nothing",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "", 6)},
			want: []holding{{lease: lease, user: "a", from: at(0), to: at(4), lastWrite: at(0), end: endExpired}},
		},
		{
			name: "taken over while the lease ran",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "id-a", 1), write("b", "id-b", 3)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(3), lastWrite: at(1), end: endTakenOver},
				{lease: lease, user: "b", from: at(3), to: at(7), lastWrite: at(3), end: endExpired},
			},
			wantBroken: []string{"b took at-0-of-6 over at 12:00:03.000000, held by a until 12:00:05.000000"},
		},
		{
			name:       "released by another user",
			reqs:       []bench.AuditRequest{write("a", "id-a", 0), write("b", "", 1)},
			want:       []holding{{lease: lease, user: "a", from: at(0), to: at(1), lastWrite: at(0), end: endReleased}},
			wantBroken: []string{"b released at-0-of-6 at 12:00:01.000000, held by a until 12:00:04.000000"},
		},
		{
			name: "a user writing another user's identity",
			reqs: []bench.AuditRequest{write("a", "id-a", 0), write("a", "", 1), write("b", "id-a", 2)},
			want: []holding{
				{lease: lease, user: "a", from: at(0), to: at(1), lastWrite: at(0), end: endReleased},
				{lease: lease, user: "b", from: at(2), to: at(6), lastWrite: at(2), end: endExpired},
			},
			wantBroken: []string{`b named "id-a" (a's identity) holder of at-0-of-6 at 12:00:02.000000`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, broken := holdings(tt.reqs, func(name string) bool { return name == lease })
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(holding{})); diff != "" {
				t.Errorf("holdings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBroken, broken); diff != "" {
				t.Errorf("broken rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandoverAfterFindsWhenTheLastLeaseMoved(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	hs := []holding{
		{lease: "at-0-of-6", user: "a", from: at(0), to: at(10), end: endReleased},
		{lease: "at-1-of-6", user: "a", from: at(0), to: at(3), end: endReleased}, // given up before t
		{lease: "at-2-of-6", user: "a", from: at(0), to: at(12), end: endExpired},
		{lease: "at-1-of-6", user: "b", from: at(3.5), to: at(20), end: endExpired},
		{lease: "at-0-of-6", user: "b", from: at(10.5), to: at(20), end: endExpired},
		{lease: "at-2-of-6", user: "c", from: at(12.2), to: at(20), end: endExpired},
	}
	tests := []struct {
		name string
		user string
		t    time.Time
		want handover
	}{
		{
			name: "every lease moved",
			user: "a", t: at(9),
			want: handover{leases: []string{"at-0-of-6", "at-2-of-6"}, ends: map[string]string{"at-0-of-6": endReleased, "at-2-of-6": endExpired},
				after: 3200 * time.Millisecond, taken: true},
		},
		{
			name: "a lease nobody took",
			user: "b", t: at(15),
			want: handover{leases: []string{"at-0-of-6", "at-1-of-6"}, ends: map[string]string{"at-0-of-6": endExpired, "at-1-of-6": endExpired}},
		},
		{
			name: "nothing held",
			user: "d", t: at(1),
			want: handover{ends: map[string]string{}, taken: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := handoverAfter(hs, tt.user, tt.t)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(handover{})); diff != "" {
				t.Errorf("handoverAfter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRoundsToTakeCountsTheTakersRoundsAfterTheHoldingEnded(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	hs := []holding{
		{lease: "at-0-of-6", user: "a", from: at(0), to: at(10), end: endReleased},
		{lease: "at-2-of-6", user: "a", from: at(0), to: at(12), end: endExpired},
		{lease: "at-0-of-6", user: "b", from: at(10.6), to: at(20), end: endExpired},
		{lease: "at-2-of-6", user: "c", from: at(13.1), to: at(20), end: endExpired},
	}
	renewals := map[string][]time.Time{
		"b": {at(9.5), at(10.5), at(11.5)},            // took at-0 in its first round after the release
		"c": {at(11.9), at(12.1), at(12.6), at(13.0)}, // took at-2 in its third round after the expiry
	}
	for _, tt := range []struct {
		name string
		user string
		t    time.Time
		want int
	}{
		{"the slowest taker counts", "a", at(9), 3},
		{"a lease nobody took", "b", at(15), -1},
		{"nothing held", "d", at(1), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := roundsToTake(hs, tt.user, tt.t, renewals); got != tt.want {
				t.Errorf("roundsToTake = %d, want %d", got, tt.want)
			}
		})
	}
}
