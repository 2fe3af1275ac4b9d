// Package shard splits a controller's objects among replicas by the hash of
// their UID, the way the API server's sharded list and watch do.
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
// This package gives the pieces a sharded controller is built from:
//   - [Split] divides the hash space into n contiguous [Range] values, and
//     [Of] says which one holds an object. A Range (or [Ranges], the set a
//     replica holds) writes its [Range.Selector] and tests an object with
//     [Range.Contains], by the same hash as the server.
//   - [WrapCacheOptions] makes a controller-runtime cache list and watch
//     the chosen kinds with the selector, so each replica's cache holds
//     only its ranges' objects.
//   - [Detect] asks the server whether it honours the selector, ignores
//     it, or refuses it.
//   - [Predicate] filters events in the process, for a server that does
//     not honour the selector: correct, without the memory saving.
//   - [Member] holds one replica's share of the ranges, each through a
//     Lease of its own (client-go's leader election), balanced among the
//     live replicas; it gives up a range only after the work in it has
//     ended ([Member.Enter], [Guard]).
//   - [Member.WrapCacheOptions] makes a cache follow the ranges a Member
//     holds: it lists and watches only their objects, and the children
//     labelled with their owner's range ([Member.Label], [RangeLabel]),
//     adding a range's objects when the Member acquires it and dropping
//     them once it has let it go.
//
// A replica that holds ranges 0 and 2 of 4:
//
//	rs, _ := shard.Split(4)
//	held := shard.Ranges{rs[0], rs[2]}
//	opts, err := shard.WrapCacheOptions(cache.Options{}, held, &v1.Widget{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	d, err := shard.Detect(ctx, mgr.GetAPIReader(), &v1.WidgetList{})
//	// and, unless d.Support is shard.Honoured:
//	ctrl.NewControllerManagedBy(mgr).For(&v1.Widget{}, builder.WithPredicates(shard.Predicate(held)))
//
// Every replica of a controller sharded through Leases, on a server with or
// without the gate (the cache filters in the process too):
//
//	m := &shard.Member{Leases: kubernetes.NewForConfigOrDie(cfg).CoordinationV1(),
//		Namespace: "widgets-system", Name: "widgets", Ranges: 8}
//	opts, err := m.WrapCacheOptions(cache.Options{}, shard.Follow{
//		Objects: []client.Object{&v1.Widget{}}, Children: []client.Object{&corev1.Pod{}}})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	_ = mgr.Add(m)
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(shard.Predicate(m))).
//		Owns(&corev1.Pod{}).
//		Complete(shard.Guard[*v1.Widget](m, mgr.GetClient(), r))
//	// and in r, before creating a Pod: m.Label(widget, pod)
//
// Only the UID is hashed; the server can also hash
// object.metadata.namespace.
package shard
