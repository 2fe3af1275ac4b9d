package requeue

import (
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Defaults of [Backoff].
const (
	// DefaultBackoffBase is the first delay of a zero Base.
	DefaultBackoffBase = time.Second
	// DefaultBackoffMax is the cap of a zero Max.
	DefaultBackoffMax = 5 * time.Minute
	// DefaultBackoffJitter is the jitter fraction of a zero Jitter.
	DefaultBackoffJitter = 0.2
	// DefaultBackoffKeys is the number of requests a zero MaxKeys tracks.
	DefaultBackoffKeys = 10_000
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
type Backoff struct {
	// Base is the first delay. Zero or less means [DefaultBackoffBase] (1s).
	Base time.Duration
	// Max caps every delay. Zero or less means [DefaultBackoffMax] (5m). A
	// Max below Base makes every delay Max.
	Max time.Duration
	// Jitter is the largest fraction of a delay removed at random, so that
	// requests failing together do not retry together. Zero means
	// [DefaultBackoffJitter] (0.2); a negative value disables jitter; values
	// above 1 count as 1.
	Jitter float64
	// MaxKeys bounds how many requests are tracked. Zero or less means
	// [DefaultBackoffKeys] (10,000).
	MaxKeys int

	mu       sync.Mutex
	failures lru[int]
}

// Next records one more failure of req and returns how long to wait before
// retrying it: always positive and at most Max.
func (b *Backoff) Next(req reconcile.Request) time.Duration {
	limit := b.MaxKeys
	if limit <= 0 {
		limit = DefaultBackoffKeys
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
