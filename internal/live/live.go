// Package live finds the values of a type that are still in use, without
// keeping them in use: the long-lived values of the library that remember
// something per object (a freshness.Tracker, a requeue.Policy, a
// recorder.Recorder, ...) add themselves to a Set when they first remember
// anything, and the metric of their size sums over the Set when it is
// scraped. A value the program dropped leaves the Set once the garbage
// collector has found it unreachable, so that neither the Set nor the metric
// holds it (a reconciler that builds a Loop, and with it a Policy, on every
// call must not fill a registry).
//
// It is internal plumbing shared by the library's metrics: Set, and
// NewGauge, the collector of every reconcilekit_*_entries gauge.
package live

import (
	"runtime"
	"sync"
	"weak"
)

// Set holds weak pointers to values of type T. The zero value is empty and
// ready to use; a Set is safe for concurrent use.
type Set[T any] struct {
	mu   sync.Mutex
	vals map[weak.Pointer[T]]struct{}
}

// Add adds v, unless it is in the set already; v leaves the set when it is
// garbage collected. A nil v is ignored. v may point inside a larger value
// (a field of a struct): it then leaves with that value.
func (s *Set[T]) Add(v *T) {
	if v == nil {
		return
	}
	wp := weak.Make(v)
	s.mu.Lock()
	if _, ok := s.vals[wp]; ok {
		s.mu.Unlock()
		return
	}
	if s.vals == nil {
		s.vals = map[weak.Pointer[T]]struct{}{}
	}
	s.vals[wp] = struct{}{}
	s.mu.Unlock()
	runtime.AddCleanup(v, s.remove, wp)
}

func (s *Set[T]) remove(wp weak.Pointer[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vals, wp)
}

// Each calls f with every value of the set that is still reachable, outside
// the set's lock (f may take the value's own locks, and a value may be
// added meanwhile).
func (s *Set[T]) Each(f func(*T)) {
	s.mu.Lock()
	vals := make([]*T, 0, len(s.vals))
	for wp := range s.vals {
		if v := wp.Value(); v != nil {
			vals = append(vals, v)
		}
	}
	s.mu.Unlock()
	for _, v := range vals {
		f(v)
	}
}

// Len returns how many values the set holds, including values that are
// unreachable but not yet collected.
func (s *Set[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.vals)
}
