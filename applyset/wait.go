package applyset

import (
	"context"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
)

// waitIndex remembers which parents wait for a kind of which API group to
// be installed, so that a CustomResourceDefinition's event wakes exactly
// them. A parent is forgotten when an Apply finds it waits for nothing,
// beyond the bound, and when an event of its group finds it woken by an
// earlier event and not heard of since: its reconcile did not call Apply
// (it is gone), or it is running, and is enqueued once more by this event.
// So an event that arrives while the parent's reconcile runs (a CRD
// created, then Established) is never lost.
type waitIndex struct {
	mu       sync.Mutex
	byGroup  map[string]map[types.NamespacedName]struct{}
	byParent map[types.NamespacedName]*waiter
}

// waiter is what the index knows of one parent.
type waiter struct {
	groups []string
	woken  bool // an event enqueued it, and no Apply has reported since
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
		w.byParent = map[types.NamespacedName]*waiter{}
	}
	for p := range w.byParent {
		if len(w.byParent) < limit {
			break
		}
		w.forgetLocked(p)
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	w.byParent[parent] = &waiter{groups: groups}
	for _, g := range groups {
		if w.byGroup[g] == nil {
			w.byGroup[g] = map[types.NamespacedName]struct{}{}
		}
		w.byGroup[g][parent] = struct{}{}
	}
}

func (w *waitIndex) forgetLocked(parent types.NamespacedName) {
	if wt := w.byParent[parent]; wt != nil {
		for _, g := range wt.groups {
			delete(w.byGroup[g], parent)
			if len(w.byGroup[g]) == 0 {
				delete(w.byGroup, g)
			}
		}
	}
	delete(w.byParent, parent)
}

// wake returns the parents waiting for group, sorted, marks them woken,
// and forgets those an earlier event woke already.
func (w *waitIndex) wake(group string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.NamespacedName
	for p := range w.byGroup[group] {
		out = append(out, p)
	}
	for _, p := range out {
		if wt := w.byParent[p]; wt.woken {
			w.forgetLocked(p)
		} else {
			wt.woken = true
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return cmpStrings(a.Namespace, b.Namespace, a.Name, b.Name) })
	return out
}

// len returns how many parents are remembered.
func (w *waitIndex) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byParent)
}

// EnqueueWaiting returns the event handler that wakes the parents whose
// children wait for their kind to be installed, when a
// CustomResourceDefinition of that kind's group is created, changes (it
// becomes Established) or goes. Watch CustomResourceDefinitions with it,
// metadata only (the handler reads only the name, "<plural>.<group>"):
//
//	ctrl.NewControllerManagedBy(mgr).For(&v1.WebApp{}).
//		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, set.EnqueueWaiting())
//
// It enqueues only parents this Set saw waiting. A parent is forgotten once
// an Apply finds it waits for nothing, or when a second event of its group
// finds it not heard of since the first (it is gone). No parent waits on a
// timer: without this watch, a parent waiting for a kind wakes at its next
// resync.
func (s *Set) EnqueueWaiting() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, crd client.Object) []reconcile.Request {
		_, group, ok := strings.Cut(crd.GetName(), ".")
		if !ok {
			return nil
		}
		parents := s.waiting.wake(group)
		reqs := make([]reconcile.Request, len(parents))
		for i, p := range parents {
			reqs[i] = reconcile.Request{NamespacedName: p}
		}
		return reqs
	})
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
