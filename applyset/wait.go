package applyset

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// waitIndex remembers which parents wait for a kind of which API group to
// be installed, so that a CustomResourceDefinition's event wakes exactly
// them. A parent is forgotten when an Apply finds it waits for nothing,
// when it is found gone (Set.Forget), and beyond the bound.
type waitIndex struct {
	mu       sync.Mutex
	byGroup  map[string]map[types.NamespacedName]struct{}
	byParent map[types.NamespacedName][]string
	// due are the parents whose wake-ups after an event are scheduled.
	due map[types.NamespacedName]struct{}
}

// schedule reports whether the parent's wake-ups after an event are to be
// scheduled, and marks them so; false while earlier ones are pending.
func (w *waitIndex) schedule(parent types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, pending := w.due[parent]; pending {
		return false
	}
	if w.due == nil {
		w.due = map[types.NamespacedName]struct{}{}
		waitIndexes.Add(w)
	}
	w.due[parent] = struct{}{}
	return true
}

// scheduled records that the parent's last wake-up has fired.
func (w *waitIndex) scheduled(parent types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.due, parent)
}

// set records that parent waits for the groups (none: it waits for
// nothing), keeping at most limit parents.
func (w *waitIndex) set(parent types.NamespacedName, groups []string, limit int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(parent)
	if len(groups) == 0 {
		return
	}
	if w.byGroup == nil {
		w.byGroup = map[string]map[types.NamespacedName]struct{}{}
		w.byParent = map[types.NamespacedName][]string{}
		waitIndexes.Add(w)
	}
	for p := range w.byParent {
		if len(w.byParent) < limit {
			break
		}
		w.forgetLocked(p)
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	w.byParent[parent] = groups
	for _, g := range groups {
		if w.byGroup[g] == nil {
			w.byGroup[g] = map[types.NamespacedName]struct{}{}
		}
		w.byGroup[g][parent] = struct{}{}
	}
}

// forget forgets parent.
func (w *waitIndex) forget(parent types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(parent)
}

// waits reports whether parent is remembered as waiting for group.
func (w *waitIndex) waits(parent types.NamespacedName, group string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byGroup[group][parent]
	return ok
}

func (w *waitIndex) forgetLocked(parent types.NamespacedName) {
	for _, g := range w.byParent[parent] {
		delete(w.byGroup[g], parent)
		if len(w.byGroup[g]) == 0 {
			delete(w.byGroup, g)
		}
	}
	delete(w.byParent, parent)
}

// waiting returns the parents waiting for group, sorted.
func (w *waitIndex) waiting(group string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(w.byGroup[group]))
	for p := range w.byGroup[group] {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return cmpStrings(a.Namespace, b.Namespace, a.Name, b.Name) })
	return out
}

// sizes returns how many parents are remembered as waiting, and how many
// have wake-ups scheduled.
func (w *waitIndex) sizes() (waiting, due int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byParent), len(w.due)
}

// len returns how many parents are remembered.
func (w *waitIndex) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byParent)
}

// discoveryLag is when a parent woken by a CustomResourceDefinition's event
// is woken again: the API server serves a new kind a moment after its CRD
// is Established (its discovery is updated asynchronously), and no event
// says when.
var discoveryLag = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}

// EnqueueWaiting returns the event handler that wakes the parents whose
// children wait for their kind to be installed, when a
// CustomResourceDefinition of that kind's group is created, changes (it
// becomes Established) or goes. Watch CustomResourceDefinitions with it,
// metadata only (the handler reads only the name, "<plural>.<group>"):
//
//	ctrl.NewControllerManagedBy(mgr).For(&v1.WebApp{}).
//		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, set.EnqueueWaiting())
//
// It enqueues only the parents this Set saw waiting for a kind of the
// group, at once and again 1, 5 and 15 seconds later (by the Set's Clock)
// while they still wait for it: the API server's discovery serves a new
// kind a moment after its CRD is Established, with no event of its own,
// and a reconcile in that moment still finds the kind missing. A parent
// already due for a wake-up gets no second one; one whose Apply found the
// kind installed, or that was found gone ([Set.Forget]), is not woken
// again. A parent is remembered until an Apply finds it waits for nothing,
// until it is found gone, or while MaxWaiting parents are remembered. No
// parent waits on a timer otherwise: without this watch, a parent waiting
// for a kind wakes at its next resync.
func (s *Set) EnqueueWaiting() handler.EventHandler {
	return waitingHandler{s}
}

// waitingHandler is the handler of EnqueueWaiting.
type waitingHandler struct{ s *Set }

func (h waitingHandler) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.wake(e.Object, q)
}

func (h waitingHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.wake(e.ObjectNew, q)
}

func (h waitingHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.wake(e.Object, q)
}

func (h waitingHandler) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.wake(e.Object, q)
}

// wake enqueues the parents waiting for crd's group, now and after each
// discoveryLag.
func (h waitingHandler) wake(crd client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if crd == nil {
		return
	}
	_, group, ok := strings.Cut(crd.GetName(), ".")
	if !ok {
		return
	}
	for _, p := range h.s.waiting.waiting(group) {
		req := reconcile.Request{NamespacedName: p}
		q.Add(req)
		if !h.s.waiting.schedule(p) {
			continue // its wake-ups are on their way
		}
		// A timer of the Set's clock, not the queue's AddAfter: a queue may
		// merge a later add of a request into the one pending now, and
		// drop the later time.
		go func() {
			defer h.s.waiting.scheduled(p)
			var waited time.Duration
			for _, d := range discoveryLag {
				t := h.s.clock().NewTimer(d - waited)
				<-t.C()
				waited = d
				if !h.s.waiting.waits(p, group) {
					return // its kind is there, or it is gone
				}
				q.Add(req)
			}
		}()
	}
}

// Forget forgets that parent waits for a kind to be installed: call it
// when the parent is found gone, so that what the Set remembers follows
// the parents that exist. reconcile.Loop calls it when it finds its object
// gone, given as the Loop's Gone (loop.Gone = set.Forget); a reconciler of
// its own calls it where its Get of the parent finds nothing. A parent
// deleted while the process did not watch (its delete event never came)
// is forgotten the same way: the next event of a CustomResourceDefinition
// of the group it waits for wakes it ([Set.EnqueueWaiting]), and that
// reconcile finds it gone. A parent whose finalizer calls Apply with no
// children is forgotten by that Apply. Forget of a parent the Set does not
// remember does nothing.
func (s *Set) Forget(parent types.NamespacedName) {
	s.waiting.forget(parent)
}

// notInstalled reports whether err says the API server serves no such
// kind: no CustomResourceDefinition of it, or one not established yet.
func notInstalled(err error) bool {
	if failed, ok := errors.AsType[*apiutil.ErrResourceDiscoveryFailed](err); ok && failed != nil && len(*failed) > 0 {
		// Every group version that failed must be missing, not unreachable.
		for _, e := range *failed {
			if !meta.IsNoMatchError(e) && !apierrors.IsNotFound(e) {
				return false
			}
		}
		return true
	}
	return meta.IsNoMatchError(err)
}
