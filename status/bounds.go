package status

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/errors"
)

// The bounds of what a [Writer] sends, when its fields leave them zero.
const (
	// DefaultMaxMessageBytes bounds each condition message a write sends:
	// room for the first lines of any error and a child's own message,
	// an eighth of what the API server accepts.
	DefaultMaxMessageBytes = 4096
	// DefaultMaxConditions bounds how many conditions a write leaves on an
	// object, beside Ready, Reconciling and Stalled: more than any
	// controller needs, far from what would weigh on the object.
	DefaultMaxConditions = 32
	// DefaultMaxBytes bounds the body of a status write: a third of what
	// etcd stores of one object by default (1.5 MiB), so that the status
	// can never be what makes an object too large to store.
	DefaultMaxBytes = 512 << 10
)

// TruncatedMarker ends a message that was cut to its bound, by
// [SetCondition], a [Writer], or errors.Message.
const TruncatedMarker = "..."

// ErrStatusTooLarge is wrapped by the error of a write whose status patch
// is larger than the Writer's MaxBytes once its condition messages and
// conditions are bounded: what makes it large is the object's own status
// fields. Nothing is sent; the error is classed permanent.
var ErrStatusTooLarge = errors.New("status: status too large to write")

// boundMessage returns m as valid UTF-8 (each invalid sequence replaced by
// U+FFFD, as the API server's JSON decoding would), cut at a rune boundary
// to at most limit bytes and ending in [TruncatedMarker] when cut. The
// same m always gives the same result, so that a long message set again
// writes nothing.
func boundMessage(m string, limit int) string {
	if !utf8.ValidString(m) {
		m = strings.ToValidUTF8(m, "\uFFFD")
	}
	if len(m) <= limit {
		return m
	}
	cut := limit - len(TruncatedMarker)
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:max(cut, 0)] + TruncatedMarker
}

func (w *Writer) maxMessageBytes() int {
	if w.MaxMessageBytes > 0 {
		return max(w.MaxMessageBytes, len(TruncatedMarker))
	}
	return DefaultMaxMessageBytes
}

func (w *Writer) maxConditions() int {
	if w.MaxConditions > 0 {
		return w.MaxConditions
	}
	return DefaultMaxConditions
}

func (w *Writer) maxBytes() int {
	if w.MaxBytes > 0 {
		return w.MaxBytes
	}
	return DefaultMaxBytes
}

// summaryTypes are the kstatus conditions a Writer never leaves out.
var summaryTypes = map[string]bool{TypeReady: true, TypeReconciling: true, TypeStalled: true}

// bound applies the Writer's bounds to after, the JSON status about to be
// written over before: every condition message cut to MaxMessageBytes,
// and, when there are more than MaxConditions conditions beside the
// kstatus three, the newest of those this write adds (types before does
// not hold) left out, so that a write never adds past the bound (another
// writer's conditions, already there, are never removed). It logs what it
// left out.
func (w *Writer) bound(ctx context.Context, before, after map[string]any) {
	list, ok := after["conditions"].([]any)
	if !ok {
		return
	}
	limit := w.maxMessageBytes()
	others := 0
	for _, item := range list {
		c, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if m, ok := c["message"].(string); ok {
			c["message"] = boundMessage(m, limit)
		}
		if t, _ := c["type"].(string); !summaryTypes[t] {
			others++
		}
	}
	excess := others - w.maxConditions()
	if excess <= 0 {
		return
	}
	had := map[string]bool{}
	if prev, ok := jsonConditions(before); ok {
		for _, c := range prev {
			if t, ok := c["type"].(string); ok {
				had[t] = true
			}
		}
	}
	var dropped []string
	for i := len(list) - 1; i >= 0 && excess > 0; i-- {
		c, _ := list[i].(map[string]any)
		t, _ := c["type"].(string)
		if c == nil || summaryTypes[t] || had[t] {
			continue
		}
		list = append(list[:i], list[i+1:]...)
		dropped = append(dropped, t)
		excess--
	}
	after["conditions"] = list
	if len(dropped) > 0 && ctx != nil {
		log.FromContext(ctx).Info("status: conditions left out: the object would hold more than the Writer's MaxConditions",
			"maxConditions", w.maxConditions(), "leftOut", dropped)
	}
}

// checkSize refuses a status patch body larger than MaxBytes.
func (w *Writer) checkSize(body []byte) error {
	if limit := w.maxBytes(); len(body) > limit {
		return errors.Permanent(fmt.Errorf("%w: the patch is %d bytes, MaxBytes is %d: the object's own status fields are too large", ErrStatusTooLarge, len(body), limit))
	}
	return nil
}
