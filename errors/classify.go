package errors

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxNodes bounds how many errors one call inspects, so that a cyclic or
// absurdly large error tree ends the walk instead of looping forever. Real
// chains are a few dozen errors deep.
const maxNodes = 10_000

// Classify returns err's [Class] and, for [ClassThrottled], the delay the server
// (or a [RetryAfter] marker) asked for; the delay is 0 otherwise, and also
// when a throttling server suggested none.
//
// The first rule that matches decides, looking down err's %w chain:
//
//  1. nil is [ClassNone];
//  2. the outermost explicit decision: a marker ([Permanent], [Transient],
//     [RetryAfter]) or [Classed] error gives its class, a
//     reconcile.TerminalError gives [ClassPermanent]; whichever is nearer
//     the top of the chain wins, so TerminalError(Transient(err)) is
//     permanent and Transient(TerminalError(err)) transient;
//  3. a Kubernetes API status error, by the table in the package
//     documentation;
//  4. context.Canceled is [ClassCanceled]; context.DeadlineExceeded, network
//     timeouts, refused, reset or aborted connections and
//     io.ErrUnexpectedEOF are [ClassTransient];
//  5. where the chain splits ([Join], or [Errorf] with several %w), each
//     branch is classified on its own and the most urgent class wins:
//     [ClassCanceled], then [ClassTransient], then [ClassThrottled] (with the longest
//     delay among the throttled branches), then [ClassConflict];
//     [ClassPermanent] only when every branch is permanent;
//  6. anything else is [ClassTransient]: unknown errors are retried.
func Classify(err error) (Class, time.Duration) {
	if err == nil {
		return ClassNone, 0
	}
	budget := maxNodes
	v := walk(err, &budget, false)
	return v.class, v.delay
}

// Classed is an error that states its own [Class], as a marker does: an
// error type of another package that knows what it means for a reconcile
// (the freshness package's stale-cache error is one: a quiet, short retry).
// [Classify] takes its Class() like a marker's, with the outermost explicit
// decision winning, and [Reason] falls back to the error type's name when
// nothing more specific is found.
//
// Two methods are optional. A Classed error of [ClassThrottled] that also
// has RetryAfter() time.Duration asks for that delay, as [RetryAfter] does
// (drift's hot-loop error waits out its hold-off this way); one that has
// Reason() string names its condition reason, when the reason is one the
// API server accepts, in place of its type's name.
type Classed interface {
	error
	Class() Class
}

// asMarker turns an error that states its class into the marker the walk
// knows, keeping the error as the cause. A *markerError is already one.
func asMarker(c Classed) *markerError {
	if m, ok := c.(*markerError); ok {
		return m
	}
	class := c.Class()
	if class == ClassNone {
		class = ClassTransient // a non-nil error is a failure
	}
	var delay time.Duration
	if r, ok := c.(interface{ RetryAfter() time.Duration }); ok && class == ClassThrottled {
		delay = max(r.RetryAfter(), 0)
	}
	return &markerError{wrapped: wrapped{unwrapOnce(c)}, class: class, delay: delay, reason: classedReason(c)}
}

// unwrapOnce returns what c wraps, or c itself when it wraps nothing, so the
// walk keeps looking beneath it for a specific reason.
func unwrapOnce(c Classed) error {
	if u, ok := c.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return opaque{c}
}

// opaque hides the Classed method of an error so the walk does not loop on it.
type opaque struct{ error }

// classedReason is the fallback condition reason of a Classed error: the
// reason it names with a Reason method, else the name of its type
// ("StaleError"), when that is a valid reason.
func classedReason(c Classed) string {
	if r, ok := c.(interface{ Reason() string }); ok {
		if name := r.Reason(); len(name) <= maxExplicitReasonLength && isConditionReason(name) {
			return name
		}
	}
	t := reflect.TypeOf(c)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name := t.Name(); isConditionReason(name) {
		return name
	}
	return "Error"
}

// verdict is what the walk concludes about one error tree.
type verdict struct {
	class Class
	delay time.Duration
	// reason is the most specific condition reason found ("" if none).
	reason string
	// fallback is the outermost marker's reason, for when there is no
	// specific one.
	fallback string
}

// walk classifies err (non-nil). With wantReason it keeps looking inside a
// marker's cause for a specific reason; Classify does not need that.
func walk(err error, budget *int, wantReason bool) verdict {
	var (
		terminal        bool
		api, network    verdict
		haveAPI, haveNw bool
		joined          verdict
		haveJoin        bool
	)
loop:
	for err != nil && *budget > 0 {
		*budget--
		if isNilPointer(err) {
			// A typed nil (var e *T; return e): nothing to inspect, and its
			// methods may panic.
			break
		}
		if c, ok := err.(Classed); ok {
			err = asMarker(c)
		}
		if m, ok := err.(*markerError); ok {
			v := verdict{class: m.class, delay: m.delay, fallback: m.reason}
			if terminal {
				// An outer reconcile.TerminalError is the outermost explicit
				// decision: controller-runtime will not retry it, whatever
				// a marker inside says.
				v = verdict{class: ClassPermanent, fallback: "PermanentError"}
			}
			if wantReason {
				switch {
				case haveAPI:
					v.reason = api.reason
				case haveNw:
					v.reason = network.reason
				default:
					v.reason = walk(m.err, budget, true).reason
				}
			}
			return v
		}
		if !terminal {
			if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(terminalSentinel) {
				terminal = true
			}
		}
		if !haveAPI {
			if s, ok := err.(apierrors.APIStatus); ok {
				api, haveAPI = fromStatus(s.Status()), true
			}
		}
		if !haveNw {
			network, haveNw = fromNetwork(err)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			joined, haveJoin = combine(u.Unwrap(), budget, wantReason)
			break loop
		default:
			break loop
		}
	}

	var v verdict
	switch {
	case terminal:
		v = verdict{class: ClassPermanent}
	case haveAPI:
		v = api
	case haveNw:
		v = network
	case haveJoin:
		v = joined
	default:
		v = verdict{class: ClassTransient}
	}
	// The reason names the cause even when a marker or a terminal error
	// decided the class.
	switch {
	case haveAPI:
		v.reason = api.reason
	case haveNw:
		v.reason = network.reason
	case haveJoin:
		v.reason = joined.reason
	}
	return v
}

// combine classifies the branches of a joined error: the highest-ranked class
// wins (the first branch with it gives the reason); throttled branches give
// the longest delay.
func combine(errs []error, budget *int, wantReason bool) (verdict, bool) {
	var best verdict
	have := false
	for _, e := range errs {
		if e == nil || *budget <= 0 {
			continue
		}
		v := walk(e, budget, wantReason)
		switch {
		case !have || v.class.rank() > best.class.rank():
			best, have = v, true
		case v.class == best.class && v.delay > best.delay:
			best.delay = v.delay
		}
	}
	return best, have
}

// fromStatus maps an API status to a verdict: see the table in doc.go.
func fromStatus(st metav1.Status) verdict {
	v := verdict{class: ClassTransient, reason: statusReason(st)}
	// apierrors.SuggestsClientDelay: the server asked the client to wait.
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		v.class = ClassThrottled
		v.delay = time.Duration(st.Details.RetryAfterSeconds) * time.Second
		return v
	}
	switch st.Reason {
	case metav1.StatusReasonConflict, metav1.StatusReasonAlreadyExists:
		v.class = ClassConflict
	case metav1.StatusReasonTooManyRequests:
		v.class = ClassThrottled
	case metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest,
		metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnsupportedMediaType,
		metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable:
		v.class = ClassPermanent
	case metav1.StatusReasonServerTimeout, metav1.StatusReasonTimeout,
		metav1.StatusReasonServiceUnavailable, metav1.StatusReasonInternalError,
		metav1.StatusReasonForbidden, metav1.StatusReasonUnauthorized,
		metav1.StatusReasonNotFound, metav1.StatusReasonGone, metav1.StatusReasonExpired:
		v.class = ClassTransient
	default:
		// An unknown or empty reason (a proxy's error page, an aggregated
		// API with its own reasons): go by the HTTP code.
		switch st.Code {
		case http.StatusConflict:
			v.class = ClassConflict
		case http.StatusTooManyRequests:
			v.class = ClassThrottled
		case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusNotAcceptable,
			http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
			http.StatusUnprocessableEntity:
			v.class = ClassPermanent
		}
	}
	return v
}

// isConditionReason reports whether r matches the pattern the API server
// enforces on metav1.Condition.Reason,
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, without a regexp on the hot path.
func isConditionReason(r string) bool {
	if r == "" {
		return false
	}
	letter := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	word := func(c byte) bool { return letter(c) || '0' <= c && c <= '9' || c == '_' }
	if !letter(r[0]) || !word(r[len(r)-1]) {
		return false
	}
	for i := 1; i < len(r)-1; i++ {
		if c := r[i]; !word(c) && c != ',' && c != ':' {
			return false
		}
	}
	return true
}

// maxReasonLength bounds a reason taken from a server's status; the API
// allows 1024 bytes but a reason is a word, not a message.
const maxReasonLength = 64

var reasonForCode = map[int32]string{
	http.StatusBadRequest:            string(metav1.StatusReasonBadRequest),
	http.StatusUnauthorized:          string(metav1.StatusReasonUnauthorized),
	http.StatusForbidden:             string(metav1.StatusReasonForbidden),
	http.StatusNotFound:              string(metav1.StatusReasonNotFound),
	http.StatusMethodNotAllowed:      string(metav1.StatusReasonMethodNotAllowed),
	http.StatusNotAcceptable:         string(metav1.StatusReasonNotAcceptable),
	http.StatusConflict:              string(metav1.StatusReasonConflict),
	http.StatusGone:                  string(metav1.StatusReasonGone),
	http.StatusRequestEntityTooLarge: string(metav1.StatusReasonRequestEntityTooLarge),
	http.StatusUnsupportedMediaType:  string(metav1.StatusReasonUnsupportedMediaType),
	http.StatusUnprocessableEntity:   string(metav1.StatusReasonInvalid),
	http.StatusTooManyRequests:       string(metav1.StatusReasonTooManyRequests),
	http.StatusInternalServerError:   string(metav1.StatusReasonInternalError),
	http.StatusServiceUnavailable:    string(metav1.StatusReasonServiceUnavailable),
	http.StatusGatewayTimeout:        string(metav1.StatusReasonTimeout),
}

// statusReason is the server's reason when it is a valid condition reason,
// else the usual reason for the HTTP code, else "".
func statusReason(st metav1.Status) string {
	r := string(st.Reason)
	if len(r) <= maxReasonLength && isConditionReason(r) {
		return r
	}
	return reasonForCode[st.Code]
}

// fromNetwork recognises context and network errors on one node of a chain
// (without unwrapping: walk does that).
func fromNetwork(err error) (verdict, bool) {
	switch {
	case is(err, context.Canceled):
		return verdict{class: ClassCanceled, reason: "Canceled"}, true
	case is(err, context.DeadlineExceeded):
		return verdict{class: ClassTransient, reason: "DeadlineExceeded"}, true
	case is(err, io.ErrUnexpectedEOF):
		return verdict{class: ClassTransient, reason: "UnexpectedEOF"}, true
	}
	if errno, ok := err.(syscall.Errno); ok {
		var r string
		switch errno {
		case syscall.ECONNREFUSED:
			r = "ConnectionRefused"
		case syscall.ECONNRESET:
			r = "ConnectionReset"
		case syscall.ECONNABORTED:
			r = "ConnectionAborted"
		case syscall.EPIPE:
			r = "BrokenPipe"
		case syscall.ETIMEDOUT:
			r = "Timeout"
		case syscall.EHOSTUNREACH:
			r = "HostUnreachable"
		case syscall.ENETUNREACH:
			r = "NetworkUnreachable"
		default:
			return verdict{}, false
		}
		return verdict{class: ClassTransient, reason: r}, true
	}
	// net.Error, url.Error, os.SyscallError and friends.
	if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
		return verdict{class: ClassTransient, reason: "Timeout"}, true
	}
	return verdict{}, false
}

// is reports whether one node (not its chain) matches target, as one step of
// errors.Is does.
func is(err, target error) bool {
	if err == target {
		return true
	}
	x, ok := err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}

// isNilPointer reports whether err is a non-nil interface holding a nil
// pointer, whose methods would likely panic.
func isNilPointer(err error) bool {
	v := reflect.ValueOf(err)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
