package errors_test

import (
	stderrors "errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/reconcilekit/reconcilekit/errors"
)

// chain wraps leaf depth times with %w, as a deep call stack would.
func chain(leaf error, depth int) error {
	err := leaf
	for i := range depth {
		err = fmt.Errorf("layer %d: %w", i, err)
	}
	return err
}

var (
	sinkClass errors.Class
	sinkBool  bool
)

// BenchmarkClassify measures Classify on chains of 1, 10 and 100 wrappers
// around an API conflict. BenchmarkStdlibIsConflict is the baseline: what
// a hand-rolled check (apierrors.IsConflict, one errors.As down the same
// chain) costs, to compare in the same run.
func BenchmarkClassify(b *testing.B) {
	for _, depth := range []int{1, 10, 100} {
		err := chain(apierrors.NewConflict(widgets, "w", stderrors.New("modified")), depth)
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkClass, _ = errors.Classify(err)
			}
		})
	}
	joined := errors.Join(chain(errors.New("a"), 30), chain(apierrors.NewTooManyRequests("x", 1), 30), chain(errors.Permanent(errors.New("c")), 30))
	b.Run("join=3x30", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkClass, _ = errors.Classify(joined)
		}
	})
}

func BenchmarkStdlibIsConflict(b *testing.B) {
	for _, depth := range []int{1, 10, 100} {
		err := chain(apierrors.NewConflict(widgets, "w", stderrors.New("modified")), depth)
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkBool = apierrors.IsConflict(err)
			}
		})
	}
}

func BenchmarkReason(b *testing.B) {
	err := chain(errors.Permanent(apierrors.NewBadRequest("x")), 100)
	b.ReportAllocs()
	for b.Loop() {
		_ = errors.Reason(err)
	}
}

// BenchmarkMessage measures Message on a typical webhook denial; the
// baseline is err.Error() alone, the floor any message costs.
func BenchmarkMessage(b *testing.B) {
	err := fmt.Errorf("update widget: %w", errors.New(`admission webhook "validate.example.com" denied the request: `+
		`request-id: 9f1c2b7a, object 0b6e2a3c-1f0e-4c1e-9a3b-2f8c1d4e5a6b at resourceVersion=48213 is locked until 2026-11-22T09:30:00Z`))
	b.Run("Message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = errors.Message(err)
		}
	})
	b.Run("Error", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = err.Error()
		}
	})
}
