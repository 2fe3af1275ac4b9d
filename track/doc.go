// Package track wakes a reconciler when an object it reads but does not own
// changes: a Secret of credentials, a ConfigMap of settings, a CA bundle
// its custom resource names. The reconcile reads such objects through a
// [Tracker], which records each read; the watch of their kind gets the
// Tracker's handler, which enqueues exactly the objects whose last reconcile
// read the one that changed, appeared or went away. No polling, no field
// index to declare, and nothing to keep in step with the spec: what is
// tracked is what was read.
//
//	refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
//	err := ctrl.NewControllerManagedBy(mgr).For(&v1.SecretMirror{}).
//		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
//		Complete(r)
//
// and in the reconcile:
//
//	reads := r.refs.For(req.NamespacedName)
//	defer reads.Done()
//	var source corev1.Secret
//	if err := reads.Get(ctx, mirror.SourceKey(), &source); err != nil {
//		return err // missing: permanent, Stalled, woken by its creation
//	}
//
// # What is remembered, and for how long
//
// Per referrer, exactly what its last reconcile read ([Tracker.For] opens
// the record, [Reads.Done] closes it): a reference the spec no longer names
// is forgotten at the end of the first reconcile that does not read it, and
// a deleted referrer's references when its reconcile finds it gone (a
// reconcile.Loop calls [Tracker.Forget]; a reconciler of its own forgets by
// reading nothing). Memory is proportional to the references held, about
// 270 bytes of heap per referrer that reads one object
// (TestMemoryOfTenThousandReferrers, 10,000 referrers over 100 Secrets),
// and back to nothing once they are gone. A reference is recorded before
// the read, so a change the read did not see still wakes the referrer.
//
// Knative's tracker, which reconciler.io's TrackAndGet uses, keeps a
// reference for a lease (twice the resync period) that the resync renews:
// a reference the referrer stopped reading lingers until the lease ends,
// and one it still reads lapses if a resync is late. controller-runtime's
// answer, handler.EnqueueRequestsFromMapFunc over a field index of the
// referrers' spec, is exact but must be written per field, and knows only
// what the spec names, not what the reconcile read.
//
// # A referenced object that is missing
//
// [Reads.Get] returns a [*MissingError] naming the object, marked
// errors.Permanent with reason [ReasonReferenceNotFound] when its kind is
// watched ([Tracker.Enqueue]): retrying cannot make it appear, and its
// creation wakes the referrer. So a reconcile.Loop, or a requeue.Policy, shows the
// referrer Stalled ("Secret \"team-a/creds\" not found") and does not retry
// in a loop, and the reconcile that follows the object's creation makes it
// Ready. The package errors still classes a plain NotFound transient: an
// object read without a Tracker, or of a kind nothing watches, has nothing
// to wake its referrer, and backoff is what recovers it.
//
// # Memory: watching a kind without caching it
//
// Watches(&corev1.Secret{}, ...) starts an informer that holds every
// Secret of the cluster, data included, for the life of the process. The
// handler needs names only, so watch the kind metadata-only
// (builder.WatchesMetadata) and strip managedFields from that informer
// ([CacheOptions]), and read through the API reader: the Tracker keeps a copy of each object a
// reconcile read, only while some referrer reads it, and serves it again
// until the watch reports a change, so a reconcile of unchanged references
// sends no request. BenchmarkWatchMemory measures the process with 10,000
// Secrets in the cluster, both ways, in one run (docs/references.md has
// the table).
//
// # Rollouts on change
//
// [Hash] turns the content of referenced objects into a string a Pod
// template carries under [HashAnnotation]: the Deployment rolls when the
// data changes, and an update that leaves the data alone changes nothing,
// so a drift.Writer writes nothing.
//
// # What it is not
//
// It tracks objects by namespace and name, not by label selector (list
// them and Track each, or watch with a map function of your own). It does
// not own or write what it tracks: children a reconciler writes are watched
// with Owns (or ownership.EnqueueLinkedOwner), and somebody else's object in
// the way of a write is drift.ForeignError's business; [Reads.Track]
// records such an object so that its deletion wakes the referrer.
package track
