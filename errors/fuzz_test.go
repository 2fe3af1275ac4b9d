package errors_test

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

var reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// leaves are the errors a fuzzed tree is built from.
var leaves = []error{
	errors.New("plain"),
	apierrors.NewConflict(widgets, "w", errors.New("modified")),
	apierrors.NewTooManyRequests("slow", 3),
	apierrors.NewBadRequest("bad"),
	apierrors.NewServiceUnavailable("down"),
	context.Canceled,
	context.DeadlineExceeded,
	io.ErrUnexpectedEOF,
	syscall.ECONNREFUSED,
	reconcile.TerminalError(nil),
	(*apierrors.StatusError)(nil),
	status(0, ""),
}

// build turns bytes into an error tree: each byte picks a leaf, a wrapper
// (%w, marker, terminal error) or a join of the next few subtrees.
func build(data []byte, pos *int, depth int) error {
	if *pos >= len(data) {
		return leaves[0]
	}
	b := data[*pos]
	*pos++
	if depth > 40 {
		return leaves[int(b)%len(leaves)]
	}
	switch b % 8 {
	case 0, 1:
		return leaves[int(b/8)%len(leaves)]
	case 2:
		return fmt.Errorf("wrap: %w", build(data, pos, depth+1))
	case 3:
		return errors.Permanent(build(data, pos, depth+1))
	case 4:
		return errors.Transient(build(data, pos, depth+1))
	case 5:
		return errors.RetryAfter(build(data, pos, depth+1), time.Duration(int8(b))*time.Second)
	case 6:
		return reconcile.TerminalError(build(data, pos, depth+1))
	default:
		n := int(b/8)%4 + 0
		parts := make([]error, n)
		for i := range parts {
			if *pos < len(data) && data[*pos] == 0xff {
				*pos++
				continue // a nil branch
			}
			parts[i] = build(data, pos, depth+1)
		}
		if b&0x80 != 0 {
			return multi(parts) // keeps nils, unlike errors.Join
		}
		return errors.Join(parts...)
	}
}

// FuzzClassify proves Classify, Reason and Message never panic on arbitrary
// nested wrap/join trees, return a declared class with a non-negative delay
// only for ClassThrottled, and a valid condition reason; and that the
// outermost explicit decision (a marker or a reconcile.TerminalError) wins
// over anything beneath it.
func FuzzClassify(f *testing.F) {
	for _, seed := range [][]byte{
		{0}, {3, 8}, {2, 2, 2, 4, 16}, {7, 0, 8, 16}, {0x87, 0xff, 8, 3, 24},
		{5, 6, 2, 7, 32, 40, 48}, {15, 3, 4, 5, 6, 2, 0, 80, 88},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pos := 0
		err := build(data, &pos, 0)
		class, delay := errors.Classify(err)
		if err == nil {
			if class != errors.ClassNone {
				t.Fatalf("Classify(nil) = %v", class)
			}
			return
		}
		if class <= errors.ClassNone || class > errors.ClassCanceled {
			t.Fatalf("Classify = %v, not a class of a non-nil error", class)
		}
		if delay < 0 || (delay != 0 && class != errors.ClassThrottled) {
			t.Fatalf("Classify = %v, %v: delay only for throttled, never negative", class, delay)
		}
		if r := errors.Reason(err); !reasonPattern.MatchString(r) {
			t.Fatalf("Reason = %q, not a valid condition reason", r)
		}
		if m := errors.Message(err); len(m) > errors.MessageLimit {
			t.Fatalf("Message has %d bytes", len(m))
		}
		// The outermost explicit decision wins, whatever the tree holds: a
		// marker, or a reconcile.TerminalError, even around a marker
		// saying otherwise.
		for _, outer := range []struct {
			name string
			wrap func(error) error
			want errors.Class
		}{
			{"Permanent", errors.Permanent, errors.ClassPermanent},
			{"Transient", errors.Transient, errors.ClassTransient},
			{"wrapped Permanent", func(e error) error { return fmt.Errorf("w: %w", errors.Permanent(e)) }, errors.ClassPermanent},
			{"TerminalError", func(e error) error { return reconcile.TerminalError(e) }, errors.ClassPermanent},
			{"wrapped TerminalError", func(e error) error { return fmt.Errorf("w: %w", reconcile.TerminalError(e)) }, errors.ClassPermanent},
		} {
			if c, _ := errors.Classify(outer.wrap(err)); c != outer.want {
				t.Fatalf("Classify(%s(tree)) = %v, want %v", outer.name, c, outer.want)
			}
		}
	})
}
