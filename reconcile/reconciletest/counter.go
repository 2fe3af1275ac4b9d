package reconciletest

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Counter records the requests made through the clients it wraps. Its zero
// value is ready to use, and it is safe for concurrent use. A Counter must
// not be copied after first use.
//
// It counts at one of two levels, with the same records ([APIRequest]) and
// queries:
//
//   - [Counter.Wrap] wraps one client.Client: the requests of the code that
//     uses that client, with the Go kind of each object. [Converge] uses it.
//   - [Counter.WrapConfig] wraps a *rest.Config: every HTTP request of every
//     client made from it, a whole manager's included (cache, client, API
//     reader, events, leader election), with resource, status code and user
//     agent.
//
// Read [Counter.Writes] to assert that a run wrote nothing, or
// [Counter.Count] and [Counter.CountResource] for one verb. Requests that
// failed are recorded too: a write the server refused was still attempted.
type Counter struct {
	mu       sync.Mutex
	requests []APIRequest
	// explain, while set, makes the counter describe what each write would
	// change (see explainWrite); Converge sets it for the idempotency run.
	explain bool
	written map[int]string
}

// Wrap returns a client that sends every request to c and records it in the
// counter. Several clients may share one counter. A client that is not a
// client.WithWatch gets a Watch that returns [ErrWatchUnsupported].
//
// When combined with a [FaultInjector], wrap the fault injector's client
// with the counter (counter outermost) so that the counter also sees the
// requests that faults made fail.
func (k *Counter) Wrap(c client.Client) client.WithWatch {
	return intercept(c, k.record)
}

func (k *Counter) record(c *call) error {
	k.mu.Lock()
	explain := k.explain && c.req.Verb.IsWrite()
	k.mu.Unlock()
	var written string
	if explain {
		written = explainWrite(c)
	}
	err := c.do()
	c.req.Err = err
	k.mu.Lock()
	defer k.mu.Unlock()
	if explain {
		if k.written == nil {
			k.written = map[int]string{}
		}
		k.written[len(k.requests)] = written
	}
	k.requests = append(k.requests, c.req)
	return err
}

// add records a request seen at the transport.
func (k *Counter) add(r APIRequest) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests = append(k.requests, r)
}

// Requests returns every request recorded so far, oldest first.
func (k *Counter) Requests() []APIRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.requests)
}

// Writes returns the recorded requests that are writes (see [Verb.IsWrite]),
// oldest first. A reconciler that has converged makes none.
func (k *Counter) Writes() []APIRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return writes(k.requests)
}

func writes(rs []APIRequest) []APIRequest {
	var w []APIRequest
	for _, r := range rs {
		if r.Verb.IsWrite() {
			w = append(w, r)
		}
	}
	return w
}

// Count returns how many recorded requests had the verb and the kind; an
// empty kind matches every kind.
func (k *Counter) Count(verb Verb, kind string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range k.requests {
		if r.Verb == verb && (kind == "" || r.Kind == kind) {
			n++
		}
	}
	return n
}

// Reset forgets every recorded request.
func (k *Counter) Reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests, k.written = nil, nil
}

// String summarizes the counts by verb and kind, one "verb Kind: n" per
// line, sorted.
func (k *Counter) String() string {
	k.mu.Lock()
	counts := map[string]int{}
	for _, r := range k.requests {
		counts[string(r.Verb)+" "+r.what()]++
	}
	k.mu.Unlock()
	keys := make([]string, 0, len(counts))
	for key := range counts {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, key := range keys {
		fmt.Fprintf(&b, "%s: %d\n", key, counts[key])
	}
	return b.String()
}

// mark returns the number of requests recorded so far and, when explain is
// true, starts describing writes.
func (k *Counter) mark(explain bool) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.explain = explain
	return len(k.requests)
}

// since returns the requests recorded after mark n, with what each write
// changed where that is known.
func (k *Counter) since(n int) ([]APIRequest, map[int]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n > len(k.requests) { // Reset was called in between.
		n = len(k.requests)
	}
	written := map[int]string{}
	for i, s := range k.written {
		if i >= n {
			written[i-n] = s
		}
	}
	return slices.Clone(k.requests[n:]), written
}

// explainWrite describes what a write is about to change: the patch of a
// patch, or for an update the difference between the object on the server
// and the object sent. It returns "" when there is nothing useful to say.
func explainWrite(c *call) string {
	if c.patch != nil {
		obj, ok := c.obj.(client.Object)
		if !ok {
			return ""
		}
		data, err := c.patch.Data(obj)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("%s patch: %s", c.patch.Type(), data)
	}
	base, sub, _ := strings.Cut(string(c.req.Verb), "/")
	if Verb(base) != VerbUpdate || (sub != "" && sub != "status") {
		return ""
	}
	obj, ok := c.obj.(client.Object)
	if !ok {
		return ""
	}
	// Read into a zero object of the same type, not a copy of obj: a
	// decoder that merged into existing maps would hide what obj adds.
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer {
		return ""
	}
	current, ok := reflect.New(t.Elem()).Interface().(client.Object)
	if !ok {
		return ""
	}
	current.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := c.c.Get(c.ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return ""
	}
	before, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	after, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err1 != nil || err2 != nil {
		return ""
	}
	if sub == "status" {
		before, after = map[string]any{"status": before["status"]}, map[string]any{"status": after["status"]}
	} else {
		delete(before, "status")
		delete(after, "status")
		for _, m := range []map[string]any{before, after} {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "resourceVersion")
				delete(md, "managedFields")
			}
		}
	}
	d := cmp.Diff(before, after)
	if d == "" {
		return "no change to the stored object (the write was not needed)"
	}
	return "changes (-stored +sent):\n" + d
}
