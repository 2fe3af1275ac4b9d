package status_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

// TestAWriteIsBoundedWhateverTheStatus writes, on a real API server, what
// would otherwise outgrow the object or fail validation at every write: a
// message of a megabyte, a message that is not UTF-8, a hundred new
// conditions, a status field of a megabyte. Each message is stored cut to
// MaxMessageBytes with the marker, valid UTF-8; the conditions this write
// adds stop at MaxConditions beside the kstatus three, and none the object
// held is removed; the oversized field is refused with ErrStatusTooLarge,
// permanent, and nothing is sent. Writing the same again sends nothing.
func TestAWriteIsBoundedWhateverTheStatus(t *testing.T) {
	api := env.Client(t)
	clk := status.WithClock(clocktesting.NewFakePassiveClock(t1Sub))
	huge := strings.Repeat("é", 1<<19) // 1 MiB
	notUTF8 := "bad \xff\xfe bytes \xc3"
	for _, tc := range []struct {
		name   string
		writer func(*status.Writer)
		mutate func(*testapi.Widget)
		check  func(t *testing.T, got *testapi.Widget, err error)
	}{
		{
			name:   "a message of a megabyte",
			mutate: func(w *testapi.Widget) { status.MarkStalled(w, "Broken", huge, clk) },
			check: func(t *testing.T, got *testapi.Widget, err error) {
				c, _ := status.FindCondition(got, status.TypeStalled)
				if err != nil || len(c.Message) > status.DefaultMaxMessageBytes || !strings.HasSuffix(c.Message, status.TruncatedMarker) || !utf8.ValidString(c.Message) {
					t.Errorf("err %v; stored message of %d bytes ending %q, want at most %d ending %q", err, len(c.Message), tail(c.Message), status.DefaultMaxMessageBytes, status.TruncatedMarker)
				}
			},
		},
		{
			name:   "a smaller bound",
			writer: func(w *status.Writer) { w.MaxMessageBytes = 100 },
			mutate: func(w *testapi.Widget) { status.MarkStalled(w, "Broken", huge, clk) },
			check: func(t *testing.T, got *testapi.Widget, err error) {
				if c, _ := status.FindCondition(got, status.TypeStalled); err != nil || len(c.Message) > 100 {
					t.Errorf("err %v; stored message of %d bytes, want at most 100", err, len(c.Message))
				}
			},
		},
		{
			name:   "a message that is not UTF-8",
			mutate: func(w *testapi.Widget) { status.MarkStalled(w, "Broken", notUTF8, clk) },
			check: func(t *testing.T, got *testapi.Widget, err error) {
				if c, _ := status.FindCondition(got, status.TypeStalled); err != nil || c.Message != strings.ToValidUTF8(notUTF8, "\uFFFD") {
					t.Errorf("err %v; stored message %q, want %q", err, c.Message, strings.ToValidUTF8(notUTF8, "\uFFFD"))
				}
			},
		},
		{
			name: "a hundred new conditions",
			mutate: func(w *testapi.Widget) {
				status.MarkReady(w, "Done", "", clk)
				for i := range 100 {
					status.SetCondition(w, metav1.Condition{Type: fmt.Sprintf("Child%03d", i), Status: metav1.ConditionTrue, Reason: "Ready"}, clk)
				}
			},
			check: func(t *testing.T, got *testapi.Widget, err error) {
				var types []string
				for _, c := range got.Status.Conditions {
					types = append(types, c.Type)
				}
				// The object held Other before: it stays, and 31 of the new.
				want := []string{"Other", "Ready"}
				for i := range status.DefaultMaxConditions - 1 {
					want = append(want, fmt.Sprintf("Child%03d", i))
				}
				if diff := cmp.Diff(want, types); err != nil || diff != "" {
					t.Errorf("err %v; stored conditions (-want +got):\n%s", err, diff)
				}
			},
		},
		{
			name:   "a status field of a megabyte",
			mutate: func(w *testapi.Widget) { w.Status.Phase = huge },
			check: func(t *testing.T, got *testapi.Widget, err error) {
				if class, _ := errors.Classify(err); !errors.Is(err, status.ErrStatusTooLarge) || class != errors.ClassPermanent {
					t.Errorf("err %v, want ErrStatusTooLarge, permanent", err)
				}
				if got.Status.Phase != "" {
					t.Errorf("the phase of %d bytes was stored", len(got.Status.Phase))
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created := newWidget(t, api)
			theirs := read(t, api, created)
			if _, err := status.NewWriter(api, "other-writer").Patch(t.Context(), theirs, func() error {
				status.SetCondition(theirs, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Theirs"}, clk)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var n calls
			w := status.NewWriter(countingClient(t, &n, nil), "test-controller")
			if tc.writer != nil {
				tc.writer(w)
			}
			write := func() error {
				obj := read(t, api, created)
				_, err := w.Patch(t.Context(), obj, func() error { tc.mutate(obj); return nil })
				return err
			}
			err := write()
			tc.check(t, read(t, api, created), err)
			sent := n.Counts()["patch/status"]
			if err := write(); (err == nil) != (tc.name != "a status field of a megabyte") {
				t.Errorf("writing the same again: %v", err)
			}
			if again := n.Counts()["patch/status"] - sent; again != 0 {
				t.Errorf("writing the same again sent %d patches, want none", again)
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 10 {
		return s[len(s)-10:]
	}
	return s
}
