// Package ranges splits the objects of a kind by the hash of their UID, the
// way the API server's sharded list and watch do.
//
// Kubernetes 1.36 added server-side sharded list and watch (KEP-5866,
// feature gate ShardedListAndWatch, alpha): a list or watch whose
// metav1.ListOptions.ShardSelector is
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// returns only the objects whose UID's 64-bit FNV-1a hash falls in the
// half-open range [start, end). Bounds are 0x and 16 hex digits; the end of
// the last range, 2^64, is written '0x10000000000000000'; several ranges
// are joined with "||".
//
//   - [Split] divides the hash space into n contiguous [Range] values, and
//     [Of] says which one holds an object. A Range (or a [Set] of them, those
//     a replica holds) writes its [Range.Selector] and tests an object with
//     [Range.Contains], by the same hash as the server.
//   - [CacheOptions] makes a controller-runtime cache list and watch chosen
//     kinds with a fixed set's selector ([ListerWatcher] for a client-go
//     informer), so a replica's cache holds only those objects.
//   - [Detect] asks the server whether it honours the selector, ignores it,
//     or refuses it.
//   - [Predicate] filters events in the process by a [Selection], for a
//     server that does not honour the selector: correct, without the
//     memory saving.
//
// Which replica holds which ranges, through Leases, is package shard's
// (shard.Member); a cache that follows the ranges a Member holds as they
// move is package follow's. A replica that holds ranges 0 and 2 of 4, fixed:
//
//	rs, _ := ranges.Split(4)
//	held := ranges.Set{rs[0], rs[2]}
//	opts, err := ranges.CacheOptions(cache.Options{}, held, &v1.Widget{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	d, err := ranges.Detect(ctx, mgr.GetAPIReader(), &v1.WidgetList{})
//	// and, unless d.Support is ranges.Honoured:
//	ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}, builder.WithPredicates(ranges.Predicate(held)))
//
// Only the UID is hashed; the server can also hash
// object.metadata.namespace.
package ranges
