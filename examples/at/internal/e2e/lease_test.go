package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// leaseRecord is one stored version of the leader election Lease.
type leaseRecord struct {
	Holder      string
	AcquireTime time.Time
	RenewTime   time.Time
	Duration    time.Duration
}

func (r leaseRecord) String() string {
	holder := r.Holder
	if holder == "" {
		holder = "(none)"
	}
	return fmt.Sprintf("holder=%s acquired=%s renewed=%s duration=%s", holder,
		r.AcquireTime.Format("15:04:05.000000"), r.RenewTime.Format("15:04:05.000000"), r.Duration)
}

func recordOf(l *coordinationv1.Lease) leaseRecord {
	r := leaseRecord{Holder: ptr.Deref(l.Spec.HolderIdentity, ""),
		Duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
	if l.Spec.AcquireTime != nil {
		r.AcquireTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		r.RenewTime = l.Spec.RenewTime.Time
	}
	return r
}

// handover is how leadership passed from one holder to the next, read from
// the Lease's history.
type handover struct {
	From, To string
	// LastRenew is From's last renewal and LeaseDuration the duration it
	// held the Lease for: without a release, the Lease expires at
	// LastRenew+LeaseDuration.
	LastRenew     time.Time
	LeaseDuration time.Duration
	// Released says that From cleared the holder before To took over.
	Released bool
	// Acquired is when To acquired the Lease (its own clock: the
	// processes of these tests share one).
	Acquired time.Time
}

// expiry is when From's lease would have expired had it not been released.
func (h handover) expiry() time.Time { return h.LastRenew.Add(h.LeaseDuration) }

// errNoHandover says that the history does not (yet) show a new holder.
var errNoHandover = errors.New("no new holder yet")

// findHandover reads from the Lease's history how leadership passed from
// holder from to the next holder.
func findHandover(history []leaseRecord, from string) (handover, error) {
	h := handover{From: from}
	held := false
	for _, r := range history {
		switch {
		case r.Holder == from:
			if h.Released {
				return h, fmt.Errorf("%s held the Lease again after releasing it", from)
			}
			held = true
			h.LastRenew, h.LeaseDuration = r.RenewTime, r.Duration
		case !held:
			// Versions before from held it.
		case r.Holder == "":
			h.Released = true
		default:
			h.To, h.Acquired = r.Holder, r.AcquireTime
			return h, nil
		}
	}
	if !held {
		return h, fmt.Errorf("%s never held the Lease", from)
	}
	return h, errNoHandover
}

func TestFindHandover(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	a := func(renew float64) leaseRecord {
		return leaseRecord{Holder: "a", AcquireTime: t0, RenewTime: at(renew), Duration: 8 * time.Second}
	}
	released := func(s float64) leaseRecord {
		return leaseRecord{AcquireTime: at(s), RenewTime: at(s), Duration: time.Second}
	}
	b := func(acquired float64) leaseRecord {
		return leaseRecord{Holder: "b", AcquireTime: at(acquired), RenewTime: at(acquired), Duration: 8 * time.Second}
	}
	tests := []struct {
		name    string
		history []leaseRecord
		want    handover
		wantErr string
	}{
		{
			name:    "released, then taken at once",
			history: []leaseRecord{a(0), a(1), a(2), released(2.5), b(3), b(4)},
			want:    handover{From: "a", To: "b", LastRenew: at(2), LeaseDuration: 8 * time.Second, Released: true, Acquired: at(3)},
		},
		{
			name:    "expired, then taken",
			history: []leaseRecord{a(0), a(1), b(9.5)},
			want:    handover{From: "a", To: "b", LastRenew: at(1), LeaseDuration: 8 * time.Second, Acquired: at(9.5)},
		},
		{
			name:    "an earlier holder and an earlier release are not this handover",
			history: []leaseRecord{b(-20), released(-10), a(0), a(1), b(9.5)},
			want:    handover{From: "a", To: "b", LastRenew: at(1), LeaseDuration: 8 * time.Second, Acquired: at(9.5)},
		},
		{name: "still held", history: []leaseRecord{a(0), a(1)}, wantErr: errNoHandover.Error()},
		{name: "released, nobody took it yet", history: []leaseRecord{a(0), released(1)}, wantErr: errNoHandover.Error()},
		{name: "never held", history: []leaseRecord{b(0)}, wantErr: "a never held the Lease"},
		{name: "held again after a release", history: []leaseRecord{a(0), released(1), a(2)}, wantErr: "held the Lease again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findHandover(tt.history, "a")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("findHandover = %+v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("findHandover = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// leaseHistory records every version of the leader election Lease from the
// moment it is started, with a watch.
type leaseHistory struct {
	mu      sync.Mutex
	records []leaseRecord
	err     error
}

// watchLease starts recording the Lease's versions until the test ends.
func watchLease(t *testing.T) *leaseHistory {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	leases := cs.CoordinationV1().Leases(operatorNamespace)
	selector := fields.OneTermEqualSelector("metadata.name", leaseName).String()
	list, err := leases.List(t.Context(), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	h := &leaseHistory{}
	for i := range list.Items {
		h.records = append(h.records, recordOf(&list.Items[i]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv})
			if err != nil {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				lease, ok := ev.Object.(*coordinationv1.Lease)
				if !ok {
					// Versions were lost: every later check would be a guess.
					h.mu.Lock()
					h.err = fmt.Errorf("watching the Lease: %v", ev.Object)
					h.mu.Unlock()
					w.Stop()
					return
				}
				rv = lease.ResourceVersion
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					h.mu.Lock()
					h.records = append(h.records, recordOf(lease))
					h.mu.Unlock()
				}
			}
			w.Stop()
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h
}

// waitHandover waits until the history shows leadership passing from from
// to another holder, and returns how.
func (h *leaseHistory) waitHandover(t *testing.T, from string, timeout time.Duration) handover {
	t.Helper()
	var got handover
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.err != nil {
			return false, h.err
		}
		var err error
		got, err = findHandover(h.records, from)
		if errors.Is(err, errNoHandover) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("waiting for leadership to pass from %s: %v\nLease history:\n%s", from, err, h)
	}
	return got
}

func (h *leaseHistory) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.records {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	return b.String()
}
