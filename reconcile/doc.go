// Package reconcile compares desired objects with live ones, writes only the
// drift, and explains itself; its [Loop] composes every reconcilekit package
// into a ready reconciler.
//
// A reconciler that compares with reflect.DeepEqual, or that calls
// controllerutil.CreateOrUpdate with a mutate function, never converges
// against a real API server: the server fills in defaults (imagePullPolicy,
// terminationMessagePath, revisionHistoryLimit, ...), so every reconcile
// sees a difference and writes. This package is the fix:
//
//   - [Diff] compares only what the desired object sets, ignores
//     server-managed metadata and status, compares quantities and times by
//     value, and matches list elements by key (containers by name, ports by
//     containerPort, ...). Its [Comparison] says whether anything drifted,
//     which fields ("spec.template.spec.containers[name=web].image"), and
//     shows a readable diff (-actual +desired) for logs and events.
//   - [Ensure] gets the live object, creates it when missing, does nothing
//     when nothing drifted, and otherwise sends one patch carrying only the
//     drifted fields. It reports an [Operation] (created, updated,
//     unchanged) and the drift. [EnsureMutate] keeps the shape of
//     CreateOrUpdate for code migrating from it; [EnsureApplied] uses
//     server-side apply and also skips the request when nothing drifted.
//   - A [HotLoopDetector] notices when the same fields keep drifting back
//     (another controller or a mutating webhook fights the reconciler),
//     stops patching for a while, records a Warning event naming the fields
//     and logs once, instead of writing forever.
//
// Options: [DiffOption] values ([IgnorePaths], [CompareStatus],
// [CompareOwnerReferences], [OwnMap], [OwnList], [ListKey], [CmpOptions])
// work for Diff and Ensure alike; [EnsureOption] values ([Owner],
// [OptimisticLock], [DetectHotLoops], [WithFieldOwner], [ForceOwnership])
// configure the writes.
//
// The package does not write status: that is the status subresource's job.
// It does not delete objects, and its zero-means-unset rule cannot express
// "this field must be cleared" for non-pointer scalars; use a pointer field
// or [OwnMap]/[OwnList] for maps and lists.
//
// # Controller references
//
// [Owner] sets the controller reference with the ownership package's
// SetController: the same references as controller-runtime's
// controllerutil.SetControllerReference, with typed errors (a
// cross-namespace or cluster-scoped mismatch is permanent).
//
// # The composed loop
//
// [Loop] is an optional, complete reconcile.Reconciler built from the other
// packages: fetch (gone means done), run finalizers on deletion, keep them on
// the object otherwise, call the user's Sync, set Ready / Reconciling /
// Stalled and observedGeneration from its outcome (see [Progress]), write the
// status subresource only when it changed, record an event on each summary
// transition, and return what requeue.Policy makes of Sync's result and
// error. A new reconciler is then only its Sync function; the At example
// (examples/at) is written that way.
//
// # Performance
//
// Deciding "equal?" runs on every reconcile of a converged object, so Diff
// decides with a lean reflection walk over what desired sets (no go-cmp,
// a couple of small allocations) and only on drift walks again to collect
// paths and explain them with go-cmp, restricted to the drifted fields.
//
// The benchmarks in diff_bench_test.go measure it on a 2-container
// Deployment (ports, env, resource limits) against the form kube-apiserver
// returned after creating it (testdata, captured from envtest and checked
// against the server by a test): Diff of the whole object and of its spec,
// against equality.Semantic.DeepDerivative, reflect.DeepEqual, cmp.Equal
// with cmpopts.EquateEmpty and cmp.Diff, once on the equal path (desired
// against its defaulted form) and once with a changed image. The figures
// of the last run, with the machine they ran on, are in BENCHMARKS.md at
// the root of the module (make bench regenerates it); run them yourself
// with
//
//	go test -run '^$' -bench Compare -benchmem ./reconcile/
//
// The verdicts do not depend on the machine, and a test checks them:
// Diff and DeepDerivative call the defaulted object equal, while
// reflect.DeepEqual and cmp.Equal call it different (the server's defaults),
// which is wrong.
package reconcile
