package errors_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

var widgets = schema.GroupResource{Group: "testing.reconcilekit.io", Resource: "widgets"}

// status builds an API status error the constructors in apierrors do not
// offer.
func status(code int32, reason metav1.StatusReason) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: "from a test"}}
}

type outcome struct {
	Class  errors.Class
	Delay  time.Duration
	Reason string
}

func classify(err error) outcome {
	c, d := errors.Classify(err)
	return outcome{Class: c, Delay: d, Reason: errors.Reason(err)}
}

// TestClassifyAPIStatus covers every API status reason in the doc.go table.
func TestClassifyAPIStatus(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "testing.reconcilekit.io", Kind: "Widget"}, "w",
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be >= 0")})
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"Conflict", apierrors.NewConflict(widgets, "w", errors.New("the object has been modified")), outcome{errors.ClassConflict, 0, "Conflict"}},
		{"AlreadyExists", apierrors.NewAlreadyExists(widgets, "w"), outcome{errors.ClassConflict, 0, "AlreadyExists"}},
		{"GenerateNameConflict asks for a delay", apierrors.NewGenerateNameConflict(widgets, "w-", 1), outcome{errors.ClassThrottled, time.Second, "AlreadyExists"}},
		{"TooManyRequests with Retry-After", apierrors.NewTooManyRequests("slow down", 7), outcome{errors.ClassThrottled, 7 * time.Second, "TooManyRequests"}},
		{"TooManyRequests without delay", apierrors.NewTooManyRequestsError("slow down"), outcome{errors.ClassThrottled, 0, "TooManyRequests"}},
		{"ServerTimeout with delay", apierrors.NewServerTimeout(widgets, "update", 3), outcome{errors.ClassThrottled, 3 * time.Second, "ServerTimeout"}},
		{"ServerTimeout without delay", apierrors.NewServerTimeout(widgets, "update", 0), outcome{errors.ClassTransient, 0, "ServerTimeout"}},
		{"Timeout with delay", apierrors.NewTimeoutError("etcd slow", 2), outcome{errors.ClassThrottled, 2 * time.Second, "Timeout"}},
		{"Timeout without delay", apierrors.NewTimeoutError("etcd slow", 0), outcome{errors.ClassTransient, 0, "Timeout"}},
		{"ServiceUnavailable", apierrors.NewServiceUnavailable("starting"), outcome{errors.ClassTransient, 0, "ServiceUnavailable"}},
		{"InternalError", apierrors.NewInternalError(errors.New("boom")), outcome{errors.ClassTransient, 0, "InternalError"}},
		{"unexpected server error 502", apierrors.NewGenericServerResponse(http.StatusBadGateway, "get", widgets, "w", "bad gateway", 0, true), outcome{errors.ClassTransient, 0, "InternalError"}},
		{"Forbidden", apierrors.NewForbidden(widgets, "w", errors.New("rbac")), outcome{errors.ClassTransient, 0, "Forbidden"}},
		{"Unauthorized", apierrors.NewUnauthorized("token expired"), outcome{errors.ClassTransient, 0, "Unauthorized"}},
		{"NotFound", apierrors.NewNotFound(widgets, "w"), outcome{errors.ClassTransient, 0, "NotFound"}},
		{"Gone", apierrors.NewGone("too old"), outcome{errors.ClassTransient, 0, "Gone"}},
		{"Expired", apierrors.NewResourceExpired("too old"), outcome{errors.ClassTransient, 0, "Expired"}},
		{"Invalid", invalid, outcome{errors.ClassPermanent, 0, "Invalid"}},
		{"BadRequest", apierrors.NewBadRequest("nonsense"), outcome{errors.ClassPermanent, 0, "BadRequest"}},
		{"RequestEntityTooLarge", apierrors.NewRequestEntityTooLargeError("3MiB"), outcome{errors.ClassPermanent, 0, "RequestEntityTooLarge"}},
		{"UnsupportedMediaType", status(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType), outcome{errors.ClassPermanent, 0, "UnsupportedMediaType"}},
		{"MethodNotAllowed", apierrors.NewMethodNotSupported(widgets, "patch"), outcome{errors.ClassPermanent, 0, "MethodNotAllowed"}},
		{"NotAcceptable", status(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable), outcome{errors.ClassPermanent, 0, "NotAcceptable"}},
		{"unknown reason, code 409", status(http.StatusConflict, ""), outcome{errors.ClassConflict, 0, "Conflict"}},
		{"unknown reason, code 429", status(http.StatusTooManyRequests, "SomethingNew"), outcome{errors.ClassThrottled, 0, "SomethingNew"}},
		{"unknown reason, code 422", status(http.StatusUnprocessableEntity, ""), outcome{errors.ClassPermanent, 0, "Invalid"}},
		{"unknown reason, code 418", status(http.StatusTeapot, ""), outcome{errors.ClassTransient, 0, "TransientError"}},
		{"reason that is not a valid condition reason", status(http.StatusBadRequest, "bad reason!"), outcome{errors.ClassPermanent, 0, "BadRequest"}},
		{"wrapped with %w", fmt.Errorf("update widget: %w", apierrors.NewConflict(widgets, "w", errors.New("modified"))), outcome{errors.ClassConflict, 0, "Conflict"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

// TestClassifyMarkersAndPrecedence proves markers win over inference, the
// outermost explicit decision (a marker, a Classed error or a
// reconcile.TerminalError) wins, so a TerminalError around a Transient
// marker is permanent and a marker around a TerminalError is the marker's
// class, terminal errors win over API statuses, and nil is ClassNone.
func TestClassifyMarkersAndPrecedence(t *testing.T) {
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	invalid := apierrors.NewBadRequest("nonsense")
	plain := errors.New("plain")
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"nil", nil, outcome{errors.ClassNone, 0, ""}},
		{"unknown error is transient", plain, outcome{errors.ClassTransient, 0, "TransientError"}},
		{"Permanent marker", errors.Permanent(plain), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"Transient marker", errors.Transient(plain), outcome{errors.ClassTransient, 0, "TransientError"}},
		{"RetryAfter marker", errors.RetryAfter(plain, 90*time.Second), outcome{errors.ClassThrottled, 90 * time.Second, "RetryAfter"}},
		{"RetryAfter negative delay is 0", errors.RetryAfter(plain, -time.Second), outcome{errors.ClassThrottled, 0, "RetryAfter"}},
		{"Permanent over a conflict, reason from the cause", errors.Permanent(conflict), outcome{errors.ClassPermanent, 0, "Conflict"}},
		{"Transient over an invalid request", errors.Transient(invalid), outcome{errors.ClassTransient, 0, "BadRequest"}},
		{"outermost marker wins", errors.Transient(fmt.Errorf("x: %w", errors.Permanent(plain))), outcome{errors.ClassTransient, 0, "TransientError"}},
		{"outermost marker wins, other order", errors.Permanent(errors.RetryAfter(plain, time.Second)), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"marker beneath wrapping", fmt.Errorf("a: %w", fmt.Errorf("b: %w", errors.Permanent(plain))), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"terminal error", reconcile.TerminalError(plain), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"terminal nil", reconcile.TerminalError(nil), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"terminal over a conflict", reconcile.TerminalError(conflict), outcome{errors.ClassPermanent, 0, "Conflict"}},
		{"marker over terminal", errors.Transient(reconcile.TerminalError(plain)), outcome{errors.ClassTransient, 0, "TransientError"}},
		{"terminal over a transient marker", reconcile.TerminalError(errors.Transient(plain)), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"terminal over a retry-after marker", reconcile.TerminalError(errors.RetryAfter(plain, time.Second)), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"wrapped terminal over a wrapped transient marker", fmt.Errorf("a: %w", reconcile.TerminalError(fmt.Errorf("b: %w", errors.Transient(plain)))), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"terminal over a Classed error", reconcile.TerminalError(&notCaughtUp{plain}), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"Classed error over terminal", &notCaughtUp{reconcile.TerminalError(plain)}, outcome{errors.ClassConflict, 0, "notCaughtUp"}},
		{"API status over network in one chain", fmt.Errorf("x: %w", &statusWrapping{conflict, io.ErrUnexpectedEOF}), outcome{errors.ClassConflict, 0, "Conflict"}},
		{"terminal over network in one chain", reconcile.TerminalError(fmt.Errorf("x: %w", io.ErrUnexpectedEOF)), outcome{errors.ClassPermanent, 0, "UnexpectedEOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

// TestClassifyJoined proves the documented rule for mixed classes: the most
// urgent retryable class wins, permanent only when all parts are permanent,
// the longest throttle delay wins.
func TestClassifyJoined(t *testing.T) {
	perm := errors.Permanent(errors.New("bad spec"))
	conflict := apierrors.NewConflict(widgets, "w", errors.New("modified"))
	throttled := apierrors.NewTooManyRequests("slow", 2)
	throttledLonger := errors.RetryAfter(errors.New("wait"), 5*time.Second)
	transient := apierrors.NewServiceUnavailable("down")
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"all permanent", errors.Join(perm, apierrors.NewBadRequest("x")), outcome{errors.ClassPermanent, 0, "PermanentError"}},
		{"permanent and conflict", errors.Join(perm, conflict), outcome{errors.ClassConflict, 0, "Conflict"}},
		{"conflict and throttled", errors.Join(conflict, throttled), outcome{errors.ClassThrottled, 2 * time.Second, "TooManyRequests"}},
		{"longest delay among throttled, first reason", errors.Join(throttled, throttledLonger), outcome{errors.ClassThrottled, 5 * time.Second, "TooManyRequests"}},
		{"throttled and transient", errors.Join(throttled, transient, perm), outcome{errors.ClassTransient, 0, "ServiceUnavailable"}},
		{"canceled beats everything", errors.Join(transient, context.Canceled), outcome{errors.ClassCanceled, 0, "Canceled"}},
		{"unknown part makes it transient", errors.Join(perm, errors.New("?")), outcome{errors.ClassTransient, 0, "TransientError"}},
		{"nested joins through %w", fmt.Errorf("outer: %w", errors.Join(perm, fmt.Errorf("in: %w", errors.Join(perm, conflict)))), outcome{errors.ClassConflict, 0, "Conflict"}},
		{"Errorf with several %w", fmt.Errorf("%w and %w", perm, throttled), outcome{errors.ClassThrottled, 2 * time.Second, "TooManyRequests"}},
		{"marker over a join", errors.Permanent(errors.Join(conflict, transient)), outcome{errors.ClassPermanent, 0, "ServiceUnavailable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

// refusedAddr returns a loopback address nothing listens on: a port the
// kernel just handed out and that was closed again.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return addr
}

// TestClassifyRealNetworkErrors uses real sockets on loopback: a refused
// dial, a refused HTTP request (as client-go would see it), a reset
// connection and a read deadline are all transient with a specific reason.
func TestClassifyRealNetworkErrors(t *testing.T) {
	addr := refusedAddr(t)
	_, dialErr := net.Dial("tcp", addr)
	if dialErr == nil {
		t.Fatalf("dial %s succeeded; want connection refused", addr)
	}
	resp, httpErr := http.Get("http://" + addr + "/apis")
	if httpErr == nil {
		resp.Body.Close()
		t.Fatalf("GET %s succeeded; want connection refused", addr)
	}

	// Reset: the server aborts the connection with SO_LINGER 0 (an RST).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	server := <-accepted
	server.(*net.TCPConn).SetLinger(0)
	server.Close()
	_, resetErr := conn.Read(make([]byte, 1))

	// Timeout: a read past its deadline on a live connection.
	conn2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn2.Close()
	defer func() { (<-accepted).Close() }()
	conn2.SetReadDeadline(time.Now().Add(-time.Second))
	_, timeoutErr := conn2.Read(make([]byte, 1))

	tests := []struct {
		name   string
		err    error
		isErr  error
		reason string
	}{
		{"dial refused", dialErr, syscall.ECONNREFUSED, "ConnectionRefused"},
		{"http refused, wrapped", fmt.Errorf("list widgets: %w", httpErr), syscall.ECONNREFUSED, "ConnectionRefused"},
		{"connection reset", resetErr, syscall.ECONNRESET, "ConnectionReset"},
		{"read deadline", timeoutErr, os.ErrDeadlineExceeded, "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.isErr) {
				t.Fatalf("setup: got %v, want an error matching %v", tt.err, tt.isErr)
			}
			want := outcome{errors.ClassTransient, 0, tt.reason}
			if diff := cmp.Diff(want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

// TestClassifyContextErrors uses real context errors: deadline is transient,
// cancellation is ClassCanceled, also when wrapped by a network operation.
func TestClassifyContextErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	var d net.Dialer
	_, dialCanceled := d.DialContext(canceled, "tcp", refusedAddr(t))

	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"canceled", canceled.Err(), outcome{errors.ClassCanceled, 0, "Canceled"}},
		{"deadline", expired.Err(), outcome{errors.ClassTransient, 0, "DeadlineExceeded"}},
		{"wrapped deadline", fmt.Errorf("get: %w", expired.Err()), outcome{errors.ClassTransient, 0, "DeadlineExceeded"}},
		{"dial with a canceled context", dialCanceled, outcome{errors.ClassCanceled, 0, "Canceled"}},
		{"unexpected EOF", fmt.Errorf("watch: %w", io.ErrUnexpectedEOF), outcome{errors.ClassTransient, 0, "UnexpectedEOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classify(tt.err)); diff != "" {
				t.Errorf("Classify/Reason(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

type cyclic struct{ next error }

func (c *cyclic) Error() string { return "cyclic" }
func (c *cyclic) Unwrap() error { return c.next }

// TestClassifyBadTrees proves Classify, Reason and Message survive typed nil
// pointers, nil branches in a custom join and a cyclic Unwrap chain.
func TestClassifyBadTrees(t *testing.T) {
	var typedNil *apierrors.StatusError
	c := &cyclic{}
	c.next = c
	tests := []struct {
		name string
		err  error
		want errors.Class
	}{
		{"typed nil status error", typedNil, errors.ClassTransient},
		{"typed nil wrapped", fmt.Errorf("x: %w", typedNil), errors.ClassTransient},
		{"typed nil inside a join", errors.Join(typedNil, apierrors.NewBadRequest("x")), errors.ClassTransient},
		{"empty custom join", multi(nil), errors.ClassTransient},
		{"custom join of nils", multi([]error{nil, nil}), errors.ClassTransient},
		{"cyclic chain", c, errors.ClassTransient},
		{"cyclic chain under a marker", errors.Permanent(c), errors.ClassPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := errors.Classify(tt.err)
			if got != tt.want {
				t.Errorf("Classify(%T) = %v, want %v", tt.err, got, tt.want)
			}
			if r := errors.Reason(tt.err); r == "" {
				t.Errorf("Reason(%T) is empty for a non-nil error", tt.err)
			}
			_ = errors.Message(tt.err)
		})
	}
}

// statusWrapping is an API status error that also wraps a cause, to test
// precedence within one chain.
type statusWrapping struct {
	*apierrors.StatusError
	cause error
}

func (s *statusWrapping) Unwrap() error { return s.cause }

type multi []error

func (m multi) Error() string   { return "multi" }
func (m multi) Unwrap() []error { return m }

func TestClassString(t *testing.T) {
	got := []string{}
	for c := errors.ClassNone; c <= errors.ClassCanceled+1; c++ {
		got = append(got, c.String())
	}
	want := []string{"none", "transient", "conflict", "throttled", "permanent", "canceled", "Class(6)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Class.String (-want +got):\n%s", diff)
	}
	if errors.Class(-1).String() != "Class(-1)" {
		t.Errorf("Class(-1).String() = %q", errors.Class(-1).String())
	}
}

func TestClassRetryable(t *testing.T) {
	want := map[errors.Class]bool{
		errors.ClassNone: false, errors.ClassTransient: true, errors.ClassConflict: true,
		errors.ClassThrottled: true, errors.ClassPermanent: false, errors.ClassCanceled: false,
	}
	got := map[errors.Class]bool{}
	for c := range want {
		got[c] = c.Retryable()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Retryable (-want +got):\n%s", diff)
	}
}
