package shard

import (
	"context"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

// TestATermThatLapsesAsItsHoldingEndsIsCounted: a replica woken from a
// freeze past its Leases finds, in the same instant, each range's renew
// deadline passed and (from leader election) the holding ended. Each
// holding's term lapsed and counts in reconcilekit_shard_fenced_total
// {at="term"}, whichever of the two its watcher sees first.
func TestATermThatLapsesAsItsHoldingEndsIsCounted(t *testing.T) {
	for n := range 200 {
		clk := testingclock.NewFakeClock(time.Unix(1000, 0))
		m := &Member{Name: fmt.Sprintf("lapse-%d", n), Clock: clk, renewed: map[int]time.Time{0: clk.Now()}}
		_, rd, _ := m.timings()
		ctx, cancel := context.WithCancel(t.Context())
		h := &holding{ctx: ctx, term: newTerm(ctx), renewal: make(chan struct{}, 1)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.keepTerms(h, 0)
		}()
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		// The freeze: the deadline passes and the holding ends together.
		clk.Step(rd)
		cancel()
		<-done
		if got := termsLapsed(t, m.Name); got != 1 {
			t.Fatalf("round %d: %v terms counted, want 1", n, got)
		}
	}
}

// TestAHoldingEndedInTimeLapsesNoTerm: a holding that ends before its
// renew deadline (given up, or its Lease lost on a renewal that said so)
// ended no term by the clock.
func TestAHoldingEndedInTimeLapsesNoTerm(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	m := &Member{Name: "in-time", Clock: clk, renewed: map[int]time.Time{0: clk.Now()}}
	_, rd, _ := m.timings()
	ctx, cancel := context.WithCancel(t.Context())
	h := &holding{ctx: ctx, term: newTerm(ctx), renewal: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.keepTerms(h, 0)
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(rd - time.Millisecond)
	cancel()
	<-done
	if got := termsLapsed(t, m.Name); got != 0 {
		t.Errorf("%v terms counted, want 0", got)
	}
}

func termsLapsed(t *testing.T, member string) float64 {
	t.Helper()
	var mm dto.Metric
	if err := fencedTotal.WithLabelValues(member, "term").Write(&mm); err != nil {
		t.Fatal(err)
	}
	return mm.GetCounter().GetValue()
}
