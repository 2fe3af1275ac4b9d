package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Fault is a way a request can fail.
type Fault string

// The faults a [FaultInjector] can inject. Each is returned instead of
// sending the request: the server never sees a request that failed this
// way.
const (
	// FaultNone lets the request through; it fills gaps in a [Sequence].
	FaultNone Fault = "none"
	// FaultConflict is 409 Conflict, as when an update carries a stale
	// resourceVersion (apierrors.IsConflict).
	FaultConflict Fault = "conflict"
	// FaultThrottle is 429 Too Many Requests with a Retry-After delay (see
	// [ThrottleDelay]), as from API priority and fairness
	// (apierrors.IsTooManyRequests, apierrors.SuggestsClientDelay).
	FaultThrottle Fault = "throttle"
	// FaultServerError is 500 Internal Server Error (apierrors.IsInternalError).
	FaultServerError Fault = "server-error"
	// FaultTimeout is 504 Gateway Timeout: the server gave up on the request
	// (apierrors.IsTimeout), with a Retry-After delay.
	FaultTimeout Fault = "timeout"
	// FaultDeadlineExceeded is a client-side timeout: the error wraps
	// context.DeadlineExceeded inside a *url.Error, as client-go returns
	// when a request's context expires.
	FaultDeadlineExceeded Fault = "deadline-exceeded"
)

// allFaults is what [Rate] chooses from when given no faults.
var allFaults = []Fault{FaultConflict, FaultThrottle, FaultServerError, FaultTimeout, FaultDeadlineExceeded}

// ErrInvalidFaultOption is wrapped by the error [NewFaultInjector] returns
// for options that cannot work.
var ErrInvalidFaultOption = errors.New("reconciletest: invalid fault option")

// FaultOption configures a [FaultInjector].
type FaultOption func(*faultOptions)

type faultOptions struct {
	rate       float64
	rateSet    bool
	faults     []Fault
	sequence   []Fault
	seqSet     bool
	verbs      []Verb
	kinds      []string
	retryAfter time.Duration
	problems   []string
}

// Rate makes each request that matches the filters fail with probability
// fraction (0 to 1), with a fault chosen evenly among faults; with no faults
// it chooses among all of them ([FaultConflict], [FaultThrottle],
// [FaultServerError], [FaultTimeout], [FaultDeadlineExceeded]). It cannot be
// combined with [Sequence].
func Rate(fraction float64, faults ...Fault) FaultOption {
	return func(o *faultOptions) {
		if math.IsNaN(fraction) || fraction < 0 || fraction > 1 {
			o.problems = append(o.problems, fmt.Sprintf("rate %v is not between 0 and 1", fraction))
		}
		o.rate, o.rateSet, o.faults = fraction, true, slices.Clone(faults)
	}
}

// Sequence makes the n-th request that matches the filters fail with
// faults[n] ([FaultNone] lets it through); requests after the end of the
// sequence succeed. It cannot be combined with [Rate].
func Sequence(faults ...Fault) FaultOption {
	return func(o *faultOptions) {
		o.sequence, o.seqSet = slices.Clone(faults), true
	}
}

// OnlyVerbs restricts injection to requests with one of the verbs, for
// example only writes: OnlyVerbs(VerbUpdate, VerbPatch, VerbStatusUpdate, VerbStatusPatch).
// Requests with other verbs pass and do not advance a [Sequence].
func OnlyVerbs(verbs ...Verb) FaultOption {
	return func(o *faultOptions) { o.verbs = append(o.verbs, verbs...) }
}

// OnlyKinds restricts injection to requests about objects of the kinds
// ("ConfigMap", "Widget"). Requests about other kinds pass and do not
// advance a [Sequence].
func OnlyKinds(kinds ...string) FaultOption {
	return func(o *faultOptions) { o.kinds = append(o.kinds, kinds...) }
}

// ThrottleDelay sets the delay the server suggests with [FaultThrottle] and
// [FaultTimeout] faults, in whole seconds (rounded up); the default is 1s.
func ThrottleDelay(d time.Duration) FaultOption {
	return func(o *faultOptions) {
		if d <= 0 {
			o.problems = append(o.problems, fmt.Sprintf("throttle delay %v is not positive", d))
		}
		o.retryAfter = d
	}
}

// Injection records one injected fault.
type Injection struct {
	// Fault is what was injected.
	Fault Fault
	// Request is the request that failed; its Err is the injected error.
	Request APIRequest
}

// FaultInjector wraps clients so that chosen requests fail. Which requests
// fail depends only on the seed, the options and the order in which
// matching requests arrive, so a single-threaded reconciler sees the same
// faults on every run. It is safe for concurrent use.
type FaultInjector struct {
	opts faultOptions

	mu       sync.Mutex
	rng      *rand.Rand
	matched  int
	injected []Injection
	paused   bool
}

// NewFaultInjector returns a fault injector whose random choices come from
// seed. With neither [Rate] nor [Sequence] it injects nothing. Options that
// cannot work (a rate outside 0..1, both Rate and Sequence, an unknown
// fault) give an error wrapping [ErrInvalidFaultOption].
func NewFaultInjector(seed uint64, opts ...FaultOption) (*FaultInjector, error) {
	o := faultOptions{retryAfter: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.rateSet && o.seqSet {
		o.problems = append(o.problems, "both Rate and Sequence given; choose one")
	}
	if o.rateSet && len(o.faults) == 0 {
		o.faults = allFaults
	}
	for _, f := range slices.Concat(o.faults, o.sequence) {
		if !slices.Contains(allFaults, f) && f != FaultNone {
			o.problems = append(o.problems, fmt.Sprintf("unknown fault %q", f))
		}
	}
	if len(o.problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidFaultOption, strings.Join(o.problems, "; "))
	}
	// Two different streams from one seed: the PCG's second word is fixed.
	return &FaultInjector{opts: o, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}, nil
}

// Wrap returns a client that sends requests to c unless the injector
// chooses to fail them. Several clients may share one injector; they then
// share its sequence and random stream. A client that is not a
// client.WithWatch gets a Watch that returns [ErrWatchUnsupported].
func (f *FaultInjector) Wrap(c client.Client) client.WithWatch {
	return intercept(c, f.inject)
}

func (f *FaultInjector) inject(c *call) error {
	if !f.matches(c.req) {
		return c.do()
	}
	fault := f.choose()
	if fault == FaultNone {
		return c.do()
	}
	err := f.faultError(fault, c)
	c.req.Err = err
	f.mu.Lock()
	f.injected = append(f.injected, Injection{Fault: fault, Request: c.req})
	f.mu.Unlock()
	return err
}

func (f *FaultInjector) matches(r APIRequest) bool {
	return (len(f.opts.verbs) == 0 || slices.Contains(f.opts.verbs, r.Verb)) &&
		(len(f.opts.kinds) == 0 || slices.Contains(f.opts.kinds, r.Kind))
}

// choose decides the fate of the next matching request.
func (f *FaultInjector) choose() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused {
		return FaultNone
	}
	n := f.matched
	f.matched++
	switch {
	case f.opts.seqSet:
		if n < len(f.opts.sequence) {
			return f.opts.sequence[n]
		}
	case f.opts.rateSet:
		if f.rng.Float64() < f.opts.rate {
			return f.opts.faults[f.rng.IntN(len(f.opts.faults))]
		}
	}
	return FaultNone
}

const injectedMessage = "injected by reconciletest"

func (f *FaultInjector) faultError(fault Fault, c *call) error {
	secs := int((f.opts.retryAfter + time.Second - 1) / time.Second)
	switch fault {
	case FaultConflict:
		return apierrors.NewConflict(groupResource(c.c, c.obj), c.req.Name, errors.New(injectedMessage))
	case FaultThrottle:
		return apierrors.NewTooManyRequests(injectedMessage, secs)
	case FaultServerError:
		return apierrors.NewInternalError(errors.New(injectedMessage))
	case FaultTimeout:
		return apierrors.NewTimeoutError(injectedMessage, secs)
	default: // FaultDeadlineExceeded; NewFaultInjector rejected anything else.
		return &url.Error{Op: httpMethod(c.req.Verb), URL: "reconciletest://" + string(c.req.Verb) + "/" + c.req.Kind, Err: context.DeadlineExceeded}
	}
}

// httpMethod is the HTTP method client-go uses for a verb, for the
// *url.Error of a FaultDeadlineExceeded fault.
func httpMethod(v Verb) string {
	base, _, _ := strings.Cut(string(v), "/")
	switch Verb(base) {
	case VerbCreate:
		return "Post"
	case VerbUpdate:
		return "Put"
	case VerbPatch, VerbApply:
		return "Patch"
	case VerbDelete, VerbDeleteAllOf:
		return "Delete"
	}
	return "Get"
}

// Injected returns the faults injected so far, oldest first.
func (f *FaultInjector) Injected() []Injection {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.injected)
}

// Matched returns how many requests have matched the filters so far, the
// denominator of the injected fraction.
func (f *FaultInjector) Matched() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.matched
}

// setPaused stops or resumes injection; while paused, requests pass and
// neither the sequence nor the random stream advances.
func (f *FaultInjector) setPaused(p bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = p
}
