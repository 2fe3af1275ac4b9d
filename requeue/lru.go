package requeue

import (
	"container/list"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// lru remembers a value per request, at most max of them: when full, the
// request touched least recently is forgotten. It is not safe for concurrent
// use; its owners lock around it.
type lru[V any] struct {
	keys  map[reconcile.Request]*list.Element
	order list.List // of *lruEntry[V], most recently touched first
}

type lruEntry[V any] struct {
	req   reconcile.Request
	value V
}

// get returns the value of req, marking it used, and whether there is one.
func (l *lru[V]) get(req reconcile.Request) (*V, bool) {
	el, ok := l.keys[req]
	if !ok {
		return nil, false
	}
	l.order.MoveToFront(el)
	return &el.Value.(*lruEntry[V]).value, true
}

// getOrAdd returns req's value, adding a zero one (and forgetting the least
// recently used requests beyond max) when there is none.
func (l *lru[V]) getOrAdd(req reconcile.Request, max int) *V {
	if v, ok := l.get(req); ok {
		return v
	}
	if l.keys == nil {
		l.keys = make(map[reconcile.Request]*list.Element)
	}
	for len(l.keys) >= max && l.order.Len() > 0 {
		oldest := l.order.Back()
		delete(l.keys, oldest.Value.(*lruEntry[V]).req)
		l.order.Remove(oldest)
	}
	e := &lruEntry[V]{req: req}
	l.keys[req] = l.order.PushFront(e)
	return &e.value
}

// forget drops req.
func (l *lru[V]) forget(req reconcile.Request) {
	if el, ok := l.keys[req]; ok {
		delete(l.keys, req)
		l.order.Remove(el)
	}
}

func (l *lru[V]) len() int { return len(l.keys) }
