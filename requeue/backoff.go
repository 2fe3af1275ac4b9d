package requeue

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Defaults of [Backoff].
const (
	// DefaultBackoffBase is the first delay of a zero Base.
	DefaultBackoffBase = time.Second
	// DefaultBackoffMax is the cap of a zero Max.
	DefaultBackoffMax = 5 * time.Minute
	// DefaultBackoffJitter is the jitter fraction of a zero Jitter.
	DefaultBackoffJitter = 0.2
	// DefaultBackoffMaxKeys is the number of requests a zero MaxKeys tracks.
	DefaultBackoffMaxKeys = 10_000
)

// Backoff tracks consecutive failures per request and hands out capped,
// jittered, exponential delays: the n-th failure in a row waits
// Base·2^(n-1), at most Max, minus a random part of up to Jitter of it. The
// zero value is ready to use with the defaults; a Backoff is safe for
// concurrent use and must not be copied after first use.
//
// Memory is bounded: at most MaxKeys requests are remembered; when full,
// the request that failed least recently is forgotten (its next delay
// restarts at Base).
//
// [Backoff.Validate] reports fields set wrong. Next has no error to return
// and does not call it: it stays total, reading a negative Base, Max or
// MaxKeys as zero (the default), a Jitter above 1 as 1, a Jitter that is not
// a number as no jitter, and capping at Max a Base above it. A [Policy]
// validates its Backoff on first use.
type Backoff struct {
	// Base is the first delay. Zero means [DefaultBackoffBase] (1s);
	// negative is invalid.
	Base time.Duration
	// Max caps every delay. Zero means [DefaultBackoffMax] (5m); negative is
	// invalid, and so is a Max below Base (defaults counted).
	Max time.Duration
	// Jitter is the largest fraction of a delay removed at random, so that
	// requests failing together do not retry together: at most 1. Zero
	// means [DefaultBackoffJitter] (0.2); a negative value disables jitter.
	Jitter float64
	// MaxKeys bounds how many requests are tracked. Zero means
	// [DefaultBackoffMaxKeys] (10,000); negative is invalid.
	MaxKeys int

	mu       sync.Mutex
	failures lru[int]
}

// Next records one more failure of req and returns how long to wait before
// retrying it: always positive and at most Max.
func (b *Backoff) Next(req reconcile.Request) time.Duration {
	limit := b.MaxKeys
	if limit <= 0 {
		limit = DefaultBackoffMaxKeys
	}
	b.mu.Lock()
	n := b.failures.getOrAdd(req, limit)
	*n++
	failures := *n
	b.mu.Unlock()
	return b.delay(failures)
}

// delay is the jittered delay after n consecutive failures.
func (b *Backoff) delay(n int) time.Duration {
	base, ceiling := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if ceiling <= 0 {
		ceiling = DefaultBackoffMax
	}
	d := min(base, ceiling)
	for i := 1; i < n && d < ceiling; i++ {
		d = min(2*d, ceiling) // doubling from below ceiling cannot overflow
	}
	jitter := b.Jitter
	switch {
	case jitter == 0:
		jitter = DefaultBackoffJitter
	case jitter > 1:
		jitter = 1
	}
	if jitter > 0 {
		// math/rand/v2's top-level functions are safe for concurrent use.
		d -= time.Duration(rand.Float64() * jitter * float64(d))
	}
	return max(d, MinDelay)
}

// Failures returns how many failures in a row Backoff remembers for req.
func (b *Backoff) Failures(req reconcile.Request) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.failures.get(req); ok {
		return *n
	}
	return 0
}

// Forget drops req's failure count, so its next failure waits Base again.
// Call it when req succeeds. A nil Backoff ignores the call.
func (b *Backoff) Forget(req reconcile.Request) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures.forget(req)
}

// Len returns how many requests Backoff currently remembers.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures.len()
}

// ErrInvalidBackoff is wrapped by every error [Backoff.Validate] returns.
var ErrInvalidBackoff = errors.New("requeue: invalid Backoff")

// Validate reports the fields of b set wrong, each in an error wrapping
// [ErrInvalidBackoff] (joined when there are several): a negative Base, Max
// or MaxKeys (zero is the way to ask for the default), a Jitter above 1, or
// infinite or not a number (it is a fraction of the delay), and a Max below
// Base, defaults counted (every delay would be Max, which is not what a
// growing backoff is for). A nil or zero Backoff is valid.
func (b *Backoff) Validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, p := range b.problems("") {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidBackoff, p))
	}
	return errors.Join(errs...)
}

// problems describes what [Backoff.Validate] rejects in b, each field named
// with prefix (a Policy says "Backoff.").
func (b *Backoff) problems(prefix string) []string {
	var out []string
	negative := func(field string, v any, def any) {
		out = append(out, fmt.Sprintf("%s%s is %v: zero means the default (%v), and a negative value means nothing", prefix, field, v, def))
	}
	if b.Base < 0 {
		negative("Base", b.Base, DefaultBackoffBase)
	}
	if b.Max < 0 {
		negative("Max", b.Max, DefaultBackoffMax)
	}
	if b.MaxKeys < 0 {
		negative("MaxKeys", b.MaxKeys, DefaultBackoffMaxKeys)
	}
	if math.IsNaN(b.Jitter) || math.IsInf(b.Jitter, 0) || b.Jitter > 1 {
		out = append(out, fmt.Sprintf("%sJitter is %v: it is the fraction of a delay removed at random, at most 1 (0 means the default, %v; negative disables it)", prefix, b.Jitter, DefaultBackoffJitter))
	}
	if b.Base >= 0 && b.Max >= 0 {
		if p := belowBase(prefix+"Max", b.Max, DefaultBackoffMax, prefix+"Base", b.Base, DefaultBackoffBase, "every delay would be"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// belowBase describes a cap (zero: its default) below the delay it caps
// (zero: its default), or returns "" when it is not below.
func belowBase(capName string, capValue, capDefault time.Duration, baseName string, base, baseDefault time.Duration, consequence string) string {
	effCap, effBase := positiveOr(capValue, capDefault), positiveOr(base, baseDefault)
	if effCap >= effBase {
		return ""
	}
	return fmt.Sprintf("%s (%s) is below %s (%s): %s %v", capName, described(capValue, capDefault), baseName, described(base, baseDefault), consequence, effCap)
}

// described is a duration field's value, saying when zero stands for the
// default.
func described(v, def time.Duration) string {
	if v == 0 {
		return def.String() + ", the default"
	}
	return v.String()
}
