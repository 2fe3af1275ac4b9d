package testenv

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// Requests counts the requests of a client, with reconciletest's Counter,
// for tests that assert how many requests of each verb an operation sent.
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
func (e *Env) CountingClient(t testing.TB) (client.Client, *Requests) {
	t.Helper()
	e.Require(t)
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("testenv: new client: %v", err)
	}
	return WithCounting(c)
}

// WithCounting wraps c so that its requests are counted.
func WithCounting(c client.Client) (client.Client, *Requests) {
	r := &Requests{}
	return r.Wrap(c), r
}
