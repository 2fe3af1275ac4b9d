package shard_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// The label keys of v0.4.0's domain, spelled out: v0.4.0 wrote them alone,
// and v0.5.x wrote them beside the keys of this version.
const (
	v040GroupLabel  = "shard.reconcilekit.dev/group"
	v040MemberLabel = "shard.reconcilekit.dev/member"
	v040Domain      = "shard.reconcilekit.dev/"
)

// v05Replica is a replica of v0.5.x as the API server sees it: its member
// Lease and the Leases of the ranges it holds, written as v0.5.x wrote them
// (labelled with the keys of both domains: shard.GroupLabel and
// shard.MemberLabel, and v0.4.0's) and renewed every round until it dies.
type v05Replica struct {
	g        *group
	identity string
	leases   []string
	stop     context.CancelFunc
	done     chan struct{}
}

// startV05Replica creates the Leases of a v0.5.x replica identity of g's
// group holding the ranges held (of testRanges), and renews them every
// testRetry until stopped (or the test ends).
func startV05Replica(t *testing.T, g *group, identity string, held ...int) *v05Replica {
	t.Helper()
	r := &v05Replica{g: g, identity: identity, leases: []string{memberLeaseName(g.name, identity)}, done: make(chan struct{})}
	for _, i := range held {
		r.leases = append(r.leases, fmt.Sprintf("%s-%d-of-%d", g.name, i, testRanges))
	}
	now := metav1.NewMicroTime(time.Now())
	for i, name := range r.leases {
		labels := map[string]string{shard.GroupLabel: g.name, v040GroupLabel: g.name}
		if i == 0 {
			labels[shard.MemberLabel], labels[v040MemberLabel] = "true", "true"
		}
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.ns, Labels: labels},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), AcquireTime: &now, RenewTime: &now,
				LeaseDurationSeconds: ptr.To(int32(testLease / time.Second))},
		}
		if _, err := g.leases.Leases(g.ns).Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			for _, name := range r.leases {
				l, err := g.leases.Leases(g.ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				if ptr.Deref(l.Spec.HolderIdentity, "") != identity {
					t.Errorf("Lease %s of the v0.5.x replica %s now names %q: taken while it renewed it", name, identity, ptr.Deref(l.Spec.HolderIdentity, ""))
					continue
				}
				now := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &now
				_, _ = g.leases.Leases(g.ns).Update(ctx, l, metav1.UpdateOptions{})
			}
			select {
			case <-ctx.Done():
			case <-time.After(testRetry):
			}
		}
	}()
	t.Cleanup(r.kill)
	return r
}

// memberLeaseName is the name of the member Lease of identity in group, as
// every version names it.
func memberLeaseName(group, identity string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity))
	return fmt.Sprintf("%s-member-%016x", group, h.Sum64())
}

// kill stops renewing the replica's Leases, as a replica that died does.
func (r *v05Replica) kill() {
	r.stop()
	<-r.done
}

// lease reads the Lease name of g's namespace.
func (g *group) lease(name string) *coordinationv1.Lease {
	g.t.Helper()
	l, err := g.leases.Leases(g.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	return l
}

// leasesBy lists the Leases of g's namespace that carry key=g.name.
func (g *group) leasesBy(key string) map[string]coordinationv1.Lease {
	g.t.Helper()
	list, err := g.leases.Leases(g.ns).List(context.Background(), metav1.ListOptions{LabelSelector: key + "=" + g.name})
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]coordinationv1.Lease{}
	for _, l := range list.Items {
		out[l.Name] = l
	}
	return out
}

// TestAMemberUpgradesFromV05Leases upgrades live Leases, as v1.0.0
// promises: from v0.5.x, whose Leases carry the keys of both domains. A
// replica of v0.5.x holds two of six ranges and its member Lease says it is
// alive. A Member of this version, started beside it (a rolling upgrade),
// counts it (two members: a share of three), takes three of the four free
// ranges and none of the old replica's, round after round; every Lease it
// writes carries this version's keys, which v0.5.x lists by too, and none
// of v0.4.0's domain. Once the old replica dies, the new Member takes over
// its expired Leases and holds all six ranges.
func TestAMemberUpgradesFromV05Leases(t *testing.T) {
	g := newGroup(t)
	old := startV05Replica(t, g, "old", 0, 1)
	split, err := ranges.Split(testRanges)
	if err != nil {
		t.Fatal(err)
	}
	oldRanges := ranges.Set{split[0], split[1]}

	r := g.start("new")
	held := func() (ranges.Set, bool) {
		h := r.m.Held()
		for _, rg := range h {
			if slices.Contains(oldRanges, rg) {
				t.Fatalf("the new Member holds %s, a range the v0.5.x replica holds and renews", rg)
			}
		}
		return h, len(h) == 3
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, settleLimit, true, func(context.Context) (bool, error) {
		_, ok := held()
		return ok, nil
	}); err != nil {
		h, _ := held()
		t.Fatalf("the new Member holds %s, want its share beside the v0.5.x replica: 3 of the 4 free ranges", h)
	}
	// Two more rounds of the new Member (each renews its member Lease):
	// its share stays three.
	own := memberLeaseName(g.name, "new")
	last, renewals := g.lease(own).ResourceVersion, 0
	if err := wait.PollUntilContextTimeout(t.Context(), testRetry/5, settleLimit, true, func(context.Context) (bool, error) {
		if rv := g.lease(own).ResourceVersion; rv != last {
			last, renewals = rv, renewals+1
		}
		return renewals >= 2, nil
	}); err != nil {
		t.Fatalf("the new Member's member Lease was renewed %d times, want 2 rounds", renewals)
	}
	if h, ok := held(); !ok {
		t.Fatalf("two rounds later the new Member holds %s, want 3 ranges: it does not count the v0.5.x replica", h)
	}

	// What the new Member wrote carries this version's keys alone.
	mine := 0
	for name, l := range g.leasesBy(shard.GroupLabel) {
		if slices.Contains(old.leases, name) {
			continue
		}
		mine++
		if isMember := name == own; (l.Labels[shard.MemberLabel] == "true") != isMember {
			t.Errorf("Lease %s: labels %v, want %s only on the member Lease", name, l.Labels, shard.MemberLabel)
		}
		for k := range l.Labels {
			if strings.HasPrefix(k, v040Domain) {
				t.Errorf("Lease %s: labels %v, want none of v0.4.0's domain", name, l.Labels)
			}
		}
	}
	if mine != 4 {
		t.Errorf("the new Member wrote %d Leases listed by %s, want 4: its member Lease and its 3 ranges'", mine, shard.GroupLabel)
	}
	// The old replica's Leases are its own: the new Member wrote none.
	for _, name := range old.leases {
		if l := g.lease(name); ptr.Deref(l.Spec.HolderIdentity, "") != "old" {
			t.Errorf("Lease %s of the v0.5.x replica: holder %q; want it untouched", name, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
	}

	// The old replica dies: its Leases expire, and the new Member takes
	// them over.
	old.kill()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, settleLimit+2*testLease, true, func(context.Context) (bool, error) {
		return len(r.m.Held()) == testRanges, nil
	}); err != nil {
		t.Fatalf("the new Member holds %s after the v0.5.x replica died, want all %d ranges", r.m.Held(), testRanges)
	}
	for _, name := range old.leases[1:] {
		l := g.lease(name)
		if ptr.Deref(l.Spec.HolderIdentity, "") != "new" || l.Labels[shard.GroupLabel] != g.name {
			t.Errorf("range Lease %s taken over: holder %q, labels %v; want the new Member, the group under %s",
				name, ptr.Deref(l.Spec.HolderIdentity, ""), l.Labels, shard.GroupLabel)
		}
	}
}
