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
// To guard every client of a manager, so that every reconciler and every
// reconcilekit function given mgr.GetClient() reads its own writes, build
// the manager's client with the Tracker:
//
//	var tracker freshness.Tracker
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewClient: tracker.NewClient})
//
// To guard one client, in a reconciler that embeds pieces without the
// manager option, wrap it:
//
//	tracker := &freshness.Tracker{Informers: mgr.GetCache()}
//	c := tracker.Wrap(mgr.GetClient())
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
// object this process deleted that still finds it, not marked for
// deletion, waits for the deletion.
//
// # What others do is news, not a lag
//
// A read of an object this process created that finds nothing is stale
// only until the cache has applied the creation. From the first read of a
// kind through the guarded client, the Tracker follows the events of the
// informer behind it, and remembers, per namespace, the newest
// resourceVersion the informer delivered. Once that is at or past this
// process's write, the cache has applied the write, and what it says now
// is the answer, returned at once: an object another writer deleted
// (kubectl delete, an eviction, a node drain, a garbage collector) reads
// as gone; one another writer deleted and created again under the same
// name reads as theirs. Only an informer's own namespace counts: a cache of
// several namespaces runs one watch per namespace, and one watch's
// progress says nothing of another's.
//
// # Memory
//
// Memory is bounded: an entry is dropped as soon as a read or an informer
// event shows the cache has caught up, a write the informer has already
// delivered when it returns (the event often travels faster than the
// answer) is not kept at all, entries older than [Tracker.TTL] are
// dropped, and there are never more than [Tracker.MaxEntries]. Each entry
// costs a few hundred bytes (BenchmarkTrackerMemory measures it; the figure
// is in BENCHMARKS.md), so the default bound of 50,000 entries is a few tens
// of MB at worst; in a controller whose cache keeps up, entries live for
// milliseconds (10,000 objects created and deleted leave none behind, and
// one at a time is remembered). The informers' progress is one
// resourceVersion per kind and namespace. A read of an object the tracker
// does not remember costs one map lookup and no allocation (BenchmarkGet).
//
// # Informers
//
// Waiting needs the cache's informers ([Tracker.Informers]; NewClient finds
// them by itself). Without them a stale read does not wait: it returns the
// StaleError at once, and the reconcile is retried shortly. The Tracker
// follows only informers that exist already, those behind the reads of the
// guarded client: NewClient learns from the manager's client options which
// reads bypass the cache (client.CacheOptions.DisableFor, and unstructured
// objects unless Unstructured is set); a wrapped client is taken to read
// typed and metadata-only objects from the cache and unstructured ones from
// the API server, controller-runtime's defaults. A write never starts an
// informer. The package does not make an uncached client any fresher (it
// needs no help), and it does not see writes made by other processes or
// other clients.
//
// controller-runtime v0.25 has read-your-own-writes of its own
// (client.CacheOptions.EnableReadYourWritesConsistency, experimental).
// docs/read-your-writes.md in the module compares the two on the same
// tests: both keep a reconciler from acting on its own stale writes and see
// another writer's deletion at once; controller-runtime's waits for as long
// as the context lets it, starts an informer on the first write of a kind
// the cache does not hold, refuses DeleteAllOf, and documents that it is
// wrong for a kind cached in more than one namespace.
package freshness
