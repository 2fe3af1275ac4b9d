// Package diet keeps an operator's informer caches to what the operator
// reads: cache transforms for controller-runtime's cache.Options (and
// client-go's informers) that drop, as each object enters the cache, what
// no reader of the process will look at.
//
// A controller-runtime manager caches every object of every kind its
// controllers watch, whole: metadata.managedFields of every field manager
// (on a custom resource with conditions, about half of what the cache holds
// of it), and every field of every child, where the operator may only look
// at a Pod's phase. Operators strip managedFields altogether
// (controller-runtime's cache.TransformStripManagedFields), which silently
// turns off drift's removals: compare.Diff finds what the operator wrote
// before, and must remove, in the operator's own entry. This package keeps
// exactly what the library reads:
//
//   - [ManagedFields] keeps, of every object, the managedFields entries
//     compare.Diff and drift's takeover read (the operator's own, the
//     entries of other managers on the same fields, all of them while an
//     entry of a manager the operator [Replaces] is there), and drops the
//     rest: the status entries, the creator's, everyone's on fields the
//     operator never wrote.
//   - [Fields] keeps, of a kind the operator only watches, its metadata and
//     the fields it names ("status.phase"), and marks the object as a part
//     ([IsPartial]); the library's functions that need a whole object read
//     it whole, or refuse it, instead of mistaking a part for drift.
//   - [Intern] makes the strings many objects hold alike (their namespace,
//     finalizers, label keys and values, the type, status and reason of
//     their conditions) share one copy instead of one per object.
//   - [Compact] stores those parts compact (a part of a Go type otherwise
//     takes the type's whole struct: 1,240 bytes for a corev1.Pod before
//     any field is set) and hands every reader the part as before.
//
// [CacheOptions] puts a whole manager on ManagedFields and Intern, and its
// parts on Compact, in one line:
//
//	opts, err := diet.CacheOptions(cache.Options{}, "app-controller")
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// # What the library reads of a cached object
//
// Each function that reads cached objects says what it needs in its
// documentation; the diet keeps all of it:
//
//   - compare.Diff and drift's Ensure, EnsureMutate, EnsureApplied: every
//     field desired sets, and the managedFields entries above; a part
//     ([Fields]) is read whole from the Writer's APIReader first.
//   - reconcile.Loop: the whole object it reconciles (never a part), not
//     its managedFields.
//   - status, finalizer: the object's status, finalizers, resourceVersion
//     and UID; nothing of managedFields.
//   - ownership: owner references and labels; freshness: resourceVersion;
//     shard: UID, labels and owner references. All in the metadata, which
//     both transforms keep.
//   - controller-runtime's own handlers, predicates and indexes read
//     metadata (owner references, labels, generation, deletion).
//
// The tests hold it so: drift's removals (a renamed container port, a
// removed env var, a map entry, a keyed list element) converge through a
// cache on the diet, on a real API server, while a transform that drops
// what they read (every managedFields entry, or another manager's entry on
// the same field) makes them fail; [Fields] parts are refused or read
// whole. docs/memory.md says what each cache of the At operator holds and
// what the diet saves, measured.
//
// # What it is not for
//
// It does not decide what an operator watches (label and field selectors
// do that, on the API server's side, and cost nothing to hold), and it does
// not write. An object on the diet must never be sent back whole with an
// Update (PUT) of the object: the API server takes the managedFields of an
// Update for the new truth, and the fields of a part for the whole object.
// Every writer of this library patches.
package diet
