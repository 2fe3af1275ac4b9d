package requeue_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/requeue"
)

// problems splits a Validate error into its lines, one per problem, and
// checks that each wraps sentinel.
func problems(t *testing.T, err, sentinel error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("Validate = %v, does not wrap %v", err, sentinel)
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate = %T, want the problems joined", err)
	}
	var lines []string
	for _, e := range joined.Unwrap() {
		if !errors.Is(e, sentinel) {
			t.Errorf("problem %q does not wrap %v", e, sentinel)
		}
		lines = append(lines, e.Error())
	}
	return lines
}

// TestBackoffValidate proves Validate accepts the zero Backoff and every
// documented setting, and names each field set wrong in a clear error
// wrapping ErrInvalidBackoff.
func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name    string
		backoff *requeue.Backoff
		want    []string
	}{
		{"nil", nil, nil},
		{"zero", &requeue.Backoff{}, nil},
		{"all set", &requeue.Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.5, MaxKeys: 10}, nil},
		{"jitter disabled", &requeue.Backoff{Jitter: -1}, nil},
		{"jitter 1", &requeue.Backoff{Jitter: 1}, nil},
		{"Max equal to Base", &requeue.Backoff{Base: time.Minute, Max: time.Minute}, nil},
		{"Base at the default Max", &requeue.Backoff{Base: requeue.DefaultBackoffMax}, nil},
		{"negative Base", &requeue.Backoff{Base: -time.Second},
			[]string{"requeue: invalid Backoff: Base is -1s: zero means the default (1s), and a negative value means nothing"}},
		{"negative Max", &requeue.Backoff{Max: -time.Second},
			[]string{"requeue: invalid Backoff: Max is -1s: zero means the default (5m0s), and a negative value means nothing"}},
		{"negative MaxKeys", &requeue.Backoff{MaxKeys: -1},
			[]string{"requeue: invalid Backoff: MaxKeys is -1: zero means the default (10000), and a negative value means nothing"}},
		{"Jitter above 1", &requeue.Backoff{Jitter: 20},
			[]string{"requeue: invalid Backoff: Jitter is 20: it is the fraction of a delay removed at random, at most 1 (0 means the default, 0.2; negative disables it)"}},
		{"Jitter not a number", &requeue.Backoff{Jitter: math.NaN()},
			[]string{"requeue: invalid Backoff: Jitter is NaN: it is the fraction of a delay removed at random, at most 1 (0 means the default, 0.2; negative disables it)"}},
		{"Jitter infinite", &requeue.Backoff{Jitter: math.Inf(-1)},
			[]string{"requeue: invalid Backoff: Jitter is -Inf: it is the fraction of a delay removed at random, at most 1 (0 means the default, 0.2; negative disables it)"}},
		{"Max below Base", &requeue.Backoff{Base: time.Hour, Max: time.Minute},
			[]string{"requeue: invalid Backoff: Max (1m0s) is below Base (1h0m0s): every delay would be 1m0s"}},
		{"the default Max below Base", &requeue.Backoff{Base: time.Hour},
			[]string{"requeue: invalid Backoff: Max (5m0s, the default) is below Base (1h0m0s): every delay would be 5m0s"}},
		{"Max below the default Base", &requeue.Backoff{Max: time.Millisecond},
			[]string{"requeue: invalid Backoff: Max (1ms) is below Base (1s, the default): every delay would be 1ms"}},
		{"several at once", &requeue.Backoff{Base: -1, MaxKeys: -2},
			[]string{
				"requeue: invalid Backoff: Base is -1ns: zero means the default (1s), and a negative value means nothing",
				"requeue: invalid Backoff: MaxKeys is -2: zero means the default (10000), and a negative value means nothing",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.backoff.Validate(), requeue.ErrInvalidBackoff)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBackoffSetWrongStaysTotal proves Next, which cannot return Validate's
// error, still hands out positive delays capped at the effective Max for a
// Backoff Validate rejects, as its documentation says.
func TestBackoffSetWrongStaysTotal(t *testing.T) {
	tests := []struct {
		name    string
		backoff *requeue.Backoff
		want    []time.Duration
	}{
		{"negative Base and Max are the defaults", &requeue.Backoff{Base: -time.Hour, Max: -time.Hour, Jitter: -1},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"NaN jitter is no jitter", &requeue.Backoff{Base: time.Second, Jitter: math.NaN()},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"Max below Base is every delay", &requeue.Backoff{Base: time.Hour, Max: time.Minute, Jitter: -1},
			[]time.Duration{time.Minute, time.Minute, time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []time.Duration
			for range tt.want {
				got = append(got, tt.backoff.Next(req("a")))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
	// An infinite jitter counts as 1: a delay of at least MinDelay, at most
	// the full one.
	b := &requeue.Backoff{Base: time.Second, Jitter: math.Inf(1)}
	if d := b.Next(req("a")); d < requeue.MinDelay || d > time.Second {
		t.Errorf("Next with an infinite jitter = %v, want in [MinDelay, 1s]", d)
	}
}

// TestPolicyValidate proves Validate accepts the zero Policy and every
// documented setting, and names each field set wrong, its Backoff's too, in
// a clear error wrapping ErrInvalidPolicy.
func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name   string
		policy *requeue.Policy
		want   []string
	}{
		{"nil", nil, nil},
		{"zero", &requeue.Policy{}, nil},
		{"all set", &requeue.Policy{ConflictDelay: time.Second, MaxConflictDelay: time.Minute, ThrottleDelay: 2 * time.Second,
			ReportAfter: time.Minute, MaxTrackedRequests: 5, Backoff: &requeue.Backoff{Base: time.Second}}, nil},
		{"negative ReportAfter reports at once", &requeue.Policy{ReportAfter: -1}, nil},
		{"negative ConflictDelay", &requeue.Policy{ConflictDelay: -time.Second},
			[]string{"requeue: invalid Policy: ConflictDelay is -1s: zero means the default (100ms), and a negative value means nothing"}},
		{"negative MaxConflictDelay", &requeue.Policy{MaxConflictDelay: -time.Second},
			[]string{"requeue: invalid Policy: MaxConflictDelay is -1s: zero means the default (30s), and a negative value means nothing"}},
		{"negative ThrottleDelay", &requeue.Policy{ThrottleDelay: -time.Second},
			[]string{"requeue: invalid Policy: ThrottleDelay is -1s: zero means the default (1s), and a negative value means nothing"}},
		{"negative MaxTrackedRequests", &requeue.Policy{MaxTrackedRequests: -1},
			[]string{"requeue: invalid Policy: MaxTrackedRequests is -1: zero means the default (10000), and a negative value means nothing"}},
		{"MaxConflictDelay below ConflictDelay", &requeue.Policy{ConflictDelay: time.Second, MaxConflictDelay: time.Millisecond},
			[]string{"requeue: invalid Policy: MaxConflictDelay (1ms) is below ConflictDelay (1s): every conflict would wait 1ms"}},
		{"ConflictDelay above the default cap", &requeue.Policy{ConflictDelay: time.Minute},
			[]string{"requeue: invalid Policy: MaxConflictDelay (30s, the default) is below ConflictDelay (1m0s): every conflict would wait 30s"}},
		{"its Backoff's problems", &requeue.Policy{ThrottleDelay: -1, Backoff: &requeue.Backoff{Base: time.Hour, Jitter: 2}},
			[]string{
				"requeue: invalid Policy: ThrottleDelay is -1ns: zero means the default (1s), and a negative value means nothing",
				"requeue: invalid Policy: Backoff.Jitter is 2: it is the fraction of a delay removed at random, at most 1 (0 means the default, 0.2; negative disables it)",
				"requeue: invalid Policy: Backoff.Max (5m0s, the default) is below Backoff.Base (1h0m0s): every delay would be 5m0s",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.policy.Validate(), requeue.ErrInvalidPolicy)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInvalidPolicyFailsEveryReconcilePermanently proves a Policy set wrong
// validates itself on first use and, instead of acting on its fields,
// decides every reconcile, a success too, as permanent: a terminal error
// wrapping ErrInvalidPolicy and the reconcile's own error, reported on the
// object with reason InvalidPolicy.
func TestInvalidPolicyFailsEveryReconcilePermanently(t *testing.T) {
	var decisions []requeue.Decision
	p := &requeue.Policy{ConflictDelay: -time.Second, Observe: func(_ context.Context, d requeue.Decision) { decisions = append(decisions, d) }}
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	for _, reconcileErr := range []error{nil, conflict, errors.New("flaky")} {
		res, err := p.Result(t.Context(), req("w"), reconcile.Result{RequeueAfter: time.Minute}, reconcileErr)
		if res.RequeueAfter != 0 {
			t.Errorf("reconcile error %v: RequeueAfter = %v, want none", reconcileErr, res.RequeueAfter)
		}
		if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, requeue.ErrInvalidPolicy) {
			t.Errorf("reconcile error %v: returned %v, want a terminal error wrapping ErrInvalidPolicy", reconcileErr, err)
		}
		if reconcileErr != nil && !errors.Is(err, reconcileErr) {
			t.Errorf("returned %v, does not keep the reconcile's own error %v", err, reconcileErr)
		}
		if !strings.Contains(err.Error(), "ConflictDelay is -1s") {
			t.Errorf("returned %q, does not name the field set wrong", err)
		}
	}
	for _, d := range decisions {
		if d.Class != errors.ClassPermanent || !d.Report || errors.Reason(d.Err) != "InvalidPolicy" {
			t.Errorf("decision: class %v, report %v, reason %q; want permanent, reported, InvalidPolicy", d.Class, d.Report, errors.Reason(d.Err))
		}
	}
	if len(decisions) != 3 {
		t.Errorf("Observe saw %d decisions, want 3", len(decisions))
	}
}
