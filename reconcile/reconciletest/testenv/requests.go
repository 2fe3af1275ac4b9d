package testenv

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// Requests is a [reconciletest.Counter] that also sums its requests by verb,
// for tests that assert what one operation sent:
//
//	c, reqs := env.CountingClient(t)
//	... // the operation
//	if diff := cmp.Diff(map[string]int{"patch/status": 1}, reqs.Snapshot()); diff != "" { ... }
//
// Its zero value is ready to use.
type Requests struct {
	reconciletest.Counter
}

// Counts returns the number of requests by verb ("get", "patch",
// "patch/status", ...) since the last Reset.
func (r *Requests) Counts() map[string]int {
	got := map[string]int{}
	for _, req := range r.Requests() {
		got[string(req.Verb)]++
	}
	return got
}

// Snapshot returns [Requests.Counts] and starts again from zero.
func (r *Requests) Snapshot() map[string]int {
	got := r.Counts()
	r.Reset()
	return got
}

// CountingClient returns a new uncached client to the API server whose
// requests are counted.
func (e *Env) CountingClient(t testing.TB) (client.WithWatch, *Requests) {
	t.Helper()
	return WithCounting(e.Client(t))
}

// WithCounting wraps c so that its requests are counted.
func WithCounting(c client.Client) (client.WithWatch, *Requests) {
	r := &Requests{}
	return r.Wrap(c), r
}
