package tracing

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ScopeName is the instrumentation scope of every span the package makes:
// the name its tracers are asked for, by which a backend tells them apart.
const ScopeName = "github.com/reconcilekit/reconcilekit/tracing"

// DefaultMaxObjects is how many objects a [Tracer] remembers when
// MaxObjects is zero.
const DefaultMaxObjects = 10_000

// maxLinks bounds the links an object collects between two reconciles:
// the latest are kept.
const maxLinks = 8

// ErrInvalidTracer is wrapped by the error [Tracer.Validate] returns.
var ErrInvalidTracer = errors.New("tracing: invalid Tracer")

// Tracer traces the reconciles of one controller: a span per reconcile,
// the waits between them, and the links from the changes of children that
// woke them (see the package documentation). Build it with [New]; a nil
// Tracer, and one built with a nil provider, traces nothing at no cost.
//
// A Tracer remembers, of each object it traced and until the object is
// gone, the trace its current edit belongs to, what its last reconcile left
// it waiting for and the links collected since: a few hundred bytes, for at
// most MaxObjects objects (the least recently reconciled is forgotten
// first; the gauge reconcilekit_tracing_entries counts them, summed over
// the Tracers of the process). Keys are namespace and name, so use one
// Tracer per controller,
// as one requeue.Policy. It is safe for concurrent use; set its fields
// before first use.
type Tracer struct {
	// MaxObjects bounds how many objects the Tracer remembers. Zero means
	// [DefaultMaxObjects]; negative is invalid.
	MaxObjects int
	// Clock dates the waits between reconciles and the waits a reconcile's
	// first read makes before its span starts. Nil means the real clock.
	// (The spans themselves are dated by the TracerProvider.)
	Clock clock.PassiveClock

	provider trace.TracerProvider
	tracer   trace.Tracer
	// name is the last kind's span name ("reconcile " + kind), made once:
	// a Tracer traces one controller, so one kind.
	name atomic.Pointer[kindName]

	mu  sync.Mutex
	mem memory
}

// New returns a Tracer whose spans tp makes (an SDK TracerProvider, or
// otel.GetTracerProvider()). A nil tp turns tracing off: the Tracer then
// does nothing and costs nothing.
func New(tp trace.TracerProvider) *Tracer {
	t := &Tracer{provider: tp}
	if tp != nil {
		t.tracer = tp.Tracer(ScopeName)
	}
	return t
}

// Validate reports a MaxObjects below zero, wrapping [ErrInvalidTracer].
// A nil Tracer is valid (it traces nothing). An invalid Tracer traces
// nothing either: tracing never fails a reconcile.
func (t *Tracer) Validate() error {
	if t != nil && t.MaxObjects < 0 {
		return fmt.Errorf("%w: MaxObjects %d is negative", ErrInvalidTracer, t.MaxObjects)
	}
	return nil
}

// Enabled reports whether t traces: it is not nil, has a TracerProvider and
// is valid. Callers check it before doing anything for t, so that tracing
// off costs nothing.
func (t *Tracer) Enabled() bool {
	return t != nil && t.tracer != nil && t.MaxObjects >= 0
}

// Len returns how many objects t remembers.
func (t *Tracer) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mem.byKey)
}

// Forget drops what t remembers of the object named key. A reconcile that
// finds the object gone forgets it already.
func (t *Tracer) Forget(key types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mem.remove(key)
}

// kindName is a kind and its reconcile span's name.
type kindName struct{ kind, name string }

// spanName returns "reconcile " + kind.
func (t *Tracer) spanName(kind string) string {
	if n := t.name.Load(); n != nil && n.kind == kind {
		return n.name
	}
	n := &kindName{kind: kind, name: "reconcile " + kind}
	t.name.Store(n)
	return n.name
}

func (t *Tracer) now() time.Time {
	if t.Clock != nil {
		return t.Clock.Now()
	}
	return clock.RealClock{}.Now()
}

func (t *Tracer) maxObjects() int {
	if t.MaxObjects > 0 {
		return t.MaxObjects
	}
	return DefaultMaxObjects
}

// entry is what a Tracer remembers of one object.
type entry struct {
	key        types.NamespacedName
	uid        types.UID
	generation int64
	// origin is the object's traceparent annotation when its edit's trace
	// began: the same annotation on a later generation is stale, not a new
	// edit's.
	origin string
	// anchor is the parent of every reconcile span of the current edit;
	// invalid: the next reconcile starts a trace of its own.
	anchor trace.SpanContext
	// last is the span of the object's last reconcile.
	last trace.SpanContext
	// wait is what the last reconcile left the object waiting for.
	wait waiting
	// links are the changes that woke the object since its last reconcile.
	links []trace.Link

	prev, next *entry
}

// waiting is a wait between two reconciles: what for, since when, for how
// long it was meant to last (zero: unknown).
type waiting struct {
	kind, reason string
	since        time.Time
	planned      time.Duration
}

// memory is a bounded map of entries, least recently used first out.
type memory struct {
	byKey      map[types.NamespacedName]*entry
	head, tail *entry // head: most recently used
}

func (m *memory) get(key types.NamespacedName) *entry {
	e := m.byKey[key]
	if e != nil {
		m.unlink(e)
		m.pushFront(e)
	}
	return e
}

// peek returns the entry of key without making it recently used.
func (m *memory) peek(key types.NamespacedName) *entry { return m.byKey[key] }

func (m *memory) add(key types.NamespacedName, max int) *entry {
	if m.byKey == nil {
		m.byKey = map[types.NamespacedName]*entry{}
	}
	for len(m.byKey) >= max && m.tail != nil {
		m.remove(m.tail.key)
	}
	e := &entry{key: key}
	m.byKey[key] = e
	m.pushFront(e)
	return e
}

func (m *memory) remove(key types.NamespacedName) {
	e := m.byKey[key]
	if e == nil {
		return
	}
	m.unlink(e)
	delete(m.byKey, key)
}

func (m *memory) pushFront(e *entry) {
	e.prev, e.next = nil, m.head
	if m.head != nil {
		m.head.prev = e
	}
	m.head = e
	if m.tail == nil {
		m.tail = e
	}
}

func (m *memory) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		m.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		m.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
