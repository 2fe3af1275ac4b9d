package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/status"
)

// loopStatusBound is the most a Loop's status write of a Widget may carry
// whatever its error or its Sync's message: the three kstatus conditions,
// each with a message of at most status.DefaultMaxMessageBytes, and their
// other fields (a generous kilobyte each).
const loopStatusBound = 3 * (status.DefaultMaxMessageBytes + 1024)

// FuzzALoopsStatusWriteIsBoundedWhateverTheError gives a Loop, on a real API
// server, an error whose text is the input (permanent, so it is reported
// at once) and, on another Widget, a Sync message that is the input: huge
// (megabytes), not UTF-8, full of control characters. Every status write
// the Loop sends is at most loopStatusBound bytes, the API server accepts
// it (the Widget holds the summary it wrote, its message valid UTF-8 and at
// most status.DefaultMaxMessageBytes), and reconciling again writes
// nothing: no write loop on a message the server would store otherwise.
//
// The seeds run in go test; fuzz on demand with
// go test -run '^$' -fuzz FuzzALoopsStatusWriteIsBoundedWhateverTheError ./reconcile/
// (each input creates a namespace and two Widgets).
func FuzzALoopsStatusWriteIsBoundedWhateverTheError(f *testing.F) {
	f.Add("")
	f.Add("plain failure")
	f.Add(strings.Repeat("x", 4<<20))
	f.Add(strings.Repeat("é", 1<<20))
	f.Add(strings.Repeat("\xff\xfe", 1<<20))
	f.Add("\x00\x01\x02\x1b[31mred\x1b[0m\x7f\u0085\u2028\u200b\ufeff end")
	f.Add(strings.Repeat("line\n\r\t", 100_000))
	f.Add(strings.Repeat("2026-11-28T09:00:00Z uid 6f1c2d3e-4a5b-4c6d-8e9f-000000000000 ", 20_000))
	f.Fuzz(func(t *testing.T, text string) {
		base := env.Client(t)
		var bodies []int
		c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if data, err := patch.Data(obj); err == nil {
					bodies = append(bodies, len(data))
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})
		ns := env.Namespace(t)
		for _, tc := range []struct {
			name    string
			sync    func(context.Context, *testapi.Widget) (reconcile.Progress, error)
			summary string
		}{
			{"error", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
				return reconcile.Progress{}, errors.Permanent(errors.New(text))
			}, status.TypeStalled},
			{"message", func(context.Context, *testapi.Widget) (reconcile.Progress, error) {
				return reconcile.Progress{State: reconcile.InProgress, Reason: "Waiting", Message: text}, nil
			}, status.TypeReconciling},
		} {
			loop := reconcile.New(c, "bound-test", tc.sync)
			req := createWidgetNamed(t, base, ns, tc.name)
			bodies = nil
			_, _ = loop.Reconcile(t.Context(), req) // the error, reported
			w := getWidget(t, base, req)
			cond, ok := status.FindCondition(w, tc.summary)
			if !ok || len(bodies) != 1 {
				t.Fatalf("%s: %d status writes, the Widget's %s condition found: %v; want one write the server accepted", tc.name, len(bodies), tc.summary, ok)
			}
			if bodies[0] > loopStatusBound {
				t.Errorf("%s: a status write of %d bytes, want at most %d", tc.name, bodies[0], loopStatusBound)
			}
			if len(cond.Message) > status.DefaultMaxMessageBytes || !utf8.ValidString(cond.Message) {
				t.Errorf("%s: stored message of %d bytes, valid UTF-8: %v; want at most %d, valid", tc.name, len(cond.Message), utf8.ValidString(cond.Message), status.DefaultMaxMessageBytes)
			}
			bodies = nil
			_, _ = loop.Reconcile(t.Context(), req)
			if len(bodies) != 0 {
				t.Errorf("%s: reconciling again sent %d status writes, want none", tc.name, len(bodies))
			}
		}
	})
}

// createWidgetNamed creates a Widget of that name in ns.
func createWidgetNamed(t *testing.T, c client.Client, ns, name string) crreconcile.Request {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return crreconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}
}
