// Package shard shares a controller's objects among its replicas: a
// [Member] holds one replica's share of the ranges of the hash space
// (package ranges), each range through a Lease of its own (client-go's
// leader election), balanced among the live replicas; it gives up a range
// only after the work in it has ended ([Member.Enter], [Guard]).
//
// Three packages, one concept each:
//   - ranges: the hash space of object UIDs and its ranges, as the API
//     server's sharded list and watch (KEP-5866, gate ShardedListAndWatch)
//     split it; selectors, a fixed set's cache, detection of the server's
//     support, an in-process filter.
//   - shard (this package): which replica holds which ranges, through
//     Leases; fencing of the work in a range.
//   - follow: a cache that follows the ranges a Member holds as they move,
//     with the children labelled with their owner's range.
//
// Every replica of a controller sharded through Leases, on a server with
// or without the gate (the cache filters in the process too):
//
//	m := shard.NewMember(kubernetes.NewForConfigOrDie(cfg).CoordinationV1(), "widgets-controller")
//	m.Namespace, m.Name, m.RangeCount = "widgets-system", "widgets", 8
//	opts, err := follow.CacheOptions(cache.Options{}, m, follow.Kinds{
//		Objects: []client.Object{&v1.Widget{}}, Children: []client.Object{&corev1.Pod{}}})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	_ = mgr.Add(m)
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Widget{}, builder.WithPredicates(ranges.Predicate(m))).
//		Owns(&corev1.Pod{}).
//		Complete(shard.Guard[*v1.Widget](m, mgr.GetClient(), r))
//	// and in r, before creating a Pod: follow.Label(m, widget, pod)
//
// The field owner given to [NewMember] is the field manager of every Lease
// write, the operator's name as on its other writes.
package shard
