package errors_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/errors"
)

// TestMessageStripsVolatileParts feeds pairs of error texts that differ only
// in volatile parts and proves Message gives both the same, expected text.
func TestMessageStripsVolatileParts(t *testing.T) {
	tests := []struct {
		name string
		a, b error
		want string
	}{
		{
			name: "uid precondition",
			a:    errors.New(`Precondition failed: UID in precondition: 0b6e2a3c-1f0e-4c1e-9a3b-2f8c1d4e5a6b, UID in object meta: 7d9f0e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6`),
			b:    errors.New(`Precondition failed: UID in precondition: 11111111-2222-4333-8444-555555555555, UID in object meta: AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE`),
			want: `Precondition failed: UID in precondition: <uid>, UID in object meta: <uid>`,
		},
		{
			name: "resourceVersion forms",
			a:    errors.New(`stale: resourceVersion=1234, "resourceVersion":"99", resource version: 7`),
			b:    errors.New(`stale: resourceVersion=5678, "resourceVersion":"100", resource version: 8`),
			want: `stale: resourceVersion=<rv>, "resourceVersion":"<rv>", resource version: <rv>`,
		},
		{
			name: "timestamps",
			a:    fmt.Errorf("not before %s (checked %s)", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC3339), time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)),
			b:    fmt.Errorf("not before %s (checked %s)", time.Date(2027, 6, 7, 8, 9, 10, 0, time.FixedZone("x", 3600)).Format(time.RFC3339Nano), time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)),
			want: `not before <time> (checked <time>)`,
		},
		{
			name: "monotonic reading",
			a:    errors.New("at <time> m=+12.345678901"),
			b:    errors.New("at <time> m=+0.000000001"),
			want: "at <time> m=<mono>",
		},
		{
			name: "request and trace ids",
			a:    errors.New(`webhook denied: request-id: abc123XYZ, traceID=4bf92f3577b34da6, X-Request-Id: q1`),
			b:    errors.New(`webhook denied: request-id: zzz999, traceID=00f067aa0ba902b7, X-Request-Id: q2`),
			want: `webhook denied: request-id: <id>, traceID=<id>, X-Request-Id: <id>`,
		},
		{
			name: "ephemeral local port",
			a:    errors.New(`read tcp 10.0.0.1:54321->10.0.0.2:443: read: connection reset by peer`),
			b:    errors.New(`read tcp 10.0.0.1:40000->10.0.0.2:443: read: connection reset by peer`),
			want: `read tcp 10.0.0.1:<port>->10.0.0.2:443: read: connection reset by peer`,
		},
		{
			name: "joined lines and white space",
			a:    errors.Join(errors.New("first  failure"), errors.New("second\tfailure\n")),
			b:    errors.Join(errors.New("first failure"), errors.New("second failure")),
			want: "first failure; second failure",
		},
		{
			name: "conflict from the API server is already stable",
			a:    apierrors.NewConflict(widgets, "w", errors.New("the object has been modified")),
			b:    errors.Permanent(apierrors.NewConflict(widgets, "w", errors.New("the object has been modified"))),
			want: `Operation cannot be fulfilled on widgets.testing.reconcilekit.io "w": the object has been modified`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, errors.Message(tt.a)); diff != "" {
				t.Errorf("Message(a) (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, errors.Message(tt.b)); diff != "" {
				t.Errorf("Message(b) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageKeepsMeaningfulNumbers proves the scrubbing does not eat
// numbers that carry meaning.
func TestMessageKeepsMeaningfulNumbers(t *testing.T) {
	for _, s := range []string{
		`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		`dial tcp 127.0.0.1:6443: connect: connection refused`,
		`identity provider "idp" rejected the request identifier`,
		`exceeded quota: pods=10, used: 10, limited: 10`,
	} {
		if got := errors.Message(errors.New(s)); got != s {
			t.Errorf("Message(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestMessageBounds(t *testing.T) {
	if got := errors.Message(nil); got != "" {
		t.Errorf("Message(nil) = %q, want empty", got)
	}
	long := strings.Repeat("é", errors.MessageLimit) // 2 bytes a rune
	got := errors.Message(errors.New(long))
	if len(got) > errors.MessageLimit || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("Message(long) has %d bytes, valid UTF-8 %v, suffix %q; want <= %d, valid, ending in ...",
			len(got), utf8.ValidString(got), got[max(0, len(got)-5):], errors.MessageLimit)
	}
	exact := strings.Repeat("a", errors.MessageLimit)
	if got := errors.Message(errors.New(exact)); got != exact {
		t.Errorf("a message of exactly MessageLimit bytes was changed")
	}
	if got := errors.Message(errors.New("bad \xff byte")); !utf8.ValidString(got) {
		t.Errorf("Message kept invalid UTF-8: %q", got)
	}
	var typedNil *apierrors.StatusError
	if got := errors.Message(fmt.Errorf("w: %w", typedNil)); got == "" {
		t.Errorf("Message of a wrapped typed nil is empty")
	}
}

// TestReasonIsAValidConditionReason proves every reason fits the API's
// pattern for metav1.Condition.Reason.
func TestReasonIsAValidConditionReason(t *testing.T) {
	for _, err := range []error{
		errors.New("x"), errors.Permanent(errors.New("x")), errors.RetryAfter(errors.New("x"), 1),
		apierrors.NewTooManyRequestsError("x"), apierrors.NewInternalError(errors.New("x")),
		status(599, "with space"), status(599, metav1.StatusReason(strings.Repeat("A", 100))),
	} {
		r := errors.Reason(err)
		if !reasonPattern.MatchString(r) || len(r) > 64 {
			t.Errorf("Reason(%v) = %q, not a valid short condition reason", err, r)
		}
	}
}
