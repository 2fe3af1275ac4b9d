// Package follow makes a controller-runtime cache follow the ranges one
// replica holds: its informers list and watch only the objects of those
// ranges, add a range's objects when the replica acquires it and delete
// them once it has let the range go, without restarting the informer.
//
// [CacheOptions] wraps a cache's options for a [Holder] (a shard.Member):
// the kind the controller reconciles is split by the hash of its own UID
// (the API server's ShardSelector, package ranges), the kinds it creates
// by their owner's range, a label each child carries from its creation
// ([Label], [RangeLabel]). Each acquisition of a range is handed over: the
// controller hears of every object of the range as new, also when a range
// is lost and acquired again (a replica that could not renew its Lease
// through an API server restart), so that the events and requeues dropped
// while it was not held are not lost. A watch whose connection ends is
// made again from where it stood while the server is out of reach, so that
// the informer does not back off.
//
//	m := shard.NewMember(kubernetes.NewForConfigOrDie(cfg).CoordinationV1(), "widgets-controller")
//	m.Namespace, m.Name, m.RangeCount = "widgets-system", "widgets", 8
//	opts, err := follow.CacheOptions(cache.Options{}, m, follow.Kinds{
//		Objects: []client.Object{&v1.Widget{}}, Children: []client.Object{&corev1.Pod{}}})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//	_ = mgr.Add(m)
//	// and in the reconciler, before creating a Pod: follow.Label(m, widget, pod)
//
// docs/sharding.md says how it is proven: a model of the informer against
// a plain one, and replicas through kube-apiserver restarts.
package follow
