// Package freshness gives a reconciler read-your-own-writes on top of an
// informer cache.
//
// controller-runtime's client reads from an informer cache and writes to the
// API server, so a read that follows a write often returns the object as it
// was before that write: a reconciler then creates a second child, rewrites
// status from an old copy, or sends a write the server refuses with 409. A
// [Tracker] remembers the resourceVersion each write of this process
// returned, and a client it guards never hands out a cached object older
// than that: the read waits, woken by the informer's own events, until the
// cache has caught up, and after [Tracker.MaxWait] returns a [*StaleError]
// that package errors classes as a conflict: a quiet, short requeue, never a
// write on stale data.
//
// Two ways to use it:
//
//   - Guard every client of a manager, so every reconciler and every
//     reconcilekit function that is given mgr.GetClient() reads its own
//     writes:
//
//     var tracker freshness.Tracker
//     mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewClient: tracker.NewClient})
//
//   - Guard one client, for a reconciler that embeds pieces without the
//     manager option:
//
//     tracker := &freshness.Tracker{Informers: mgr.GetCache()}
//     c := tracker.Wrap(mgr.GetClient())
//
// reconcile.Loop guards its client by default (see its Freshness field).
//
// What counts as a write: Create, Update, Patch, Apply of an unstructured
// apply configuration, Delete, and Update, Patch and Apply of a subresource
// (status), through the guarded client. What is checked: Get, and List
// (a list is fresh when every tracked object of its kind, in its namespace,
// is). resourceVersions are compared with apimachinery's
// pkg/util/resourceversion; a resourceVersion that is not an integer (some
// aggregated APIs) cannot be compared and is taken as fresh. A read of an
// object this process created that finds nothing waits too; a read of an
// object it deleted that still finds it, not marked for deletion, waits for
// the deletion.
//
// Memory is bounded: an entry is dropped as soon as a read or an informer
// event shows the cache has caught up, entries older than [Tracker.TTL] are
// dropped, and there are never more than [Tracker.MaxEntries]. Each entry
// costs a few hundred bytes (BenchmarkTrackerMemory measures it; the figure
// is in BENCHMARKS.md), so the default bound of 50,000 entries is a few tens
// of MB at worst; in a controller whose cache keeps up, entries live for
// milliseconds. A read of an object the tracker does not remember costs one
// map lookup and no allocation (BenchmarkGet).
//
// Waiting needs the cache's informers ([Tracker.Informers]; NewClient finds
// them by itself). Without them a stale read does not wait: it returns the
// StaleError at once, and the reconcile is retried shortly. The package does
// not make an uncached client any fresher (it needs no help), and it does
// not see writes made by other processes or other clients.
package freshness
