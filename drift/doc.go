// Package drift compares desired objects with live ones, writes only what
// drifted, and explains itself.
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
//     containerPort, ...). What the field owner wrote before and desired no
//     longer sets is drift too (see "Fields we wrote before"). Its
//     [Comparison] says whether anything drifted, which fields
//     ("spec.template.spec.containers[name=web].image"), and shows a
//     readable diff (-actual +desired) for logs and events.
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
// One [Option] type serves Diff and Ensure alike: [IgnorePaths],
// [CompareStatus], [CompareOwnerReferences], [Own], [ListKey], [CmpOptions]
// and [WithFieldOwner] say how to compare; [Owner], [OptimisticLock],
// [DetectHotLoops], [ForceOwnership] and [Replaces] shape the writes (Diff
// ignores them). Ensure and its variants require [WithFieldOwner] (see "One
// field owner"):
//
//	drift.Ensure(ctx, c, deployment, drift.Owner(app), drift.WithFieldOwner("app-controller"))
//
// The package does not write status: that is the status subresource's job.
// It does not delete objects (package ownership prunes children). Its
// zero-means-unset rule cannot express "this field must be cleared" for a
// non-pointer scalar desired never set; use a pointer field, or [Own] for
// maps and lists.
//
// # One field owner
//
// Every write this package sends (Ensure's creates and patches,
// EnsureMutate's, EnsureApplied's applies, and the managedFields patch of
// [Replaces]) carries the field owner the operator names with
// [WithFieldOwner], and no write goes out under a name shared by every
// user of the package: there is no default. Without it Ensure, EnsureMutate
// and EnsureApplied send nothing and return [ErrNoFieldOwner], classed
// permanent. The status and finalizer packages follow the same rule
// (status.Writer.FieldOwner, finalizer.WithFieldOwner), and reconcile.Loop
// passes its one FieldOwner to both: give drift the same name, so that the
// API server records one field manager per operator. Deleting carries no
// field manager (a DELETE has none): package ownership's Prune sends plain
// deletes.
//
// The name is whose fields are "ours" below. Two operators sharing one
// name, as every operator on this package did while Ensure defaulted to
// "reconcilekit", each take the other's labels, annotations and list
// elements on a shared object for fields they wrote before, and remove
// them: they fight for ever. [Diff], which writes nothing, needs no name:
// without WithFieldOwner it owns nothing and compares only what desired
// sets.
//
// # Adopting what another controller wrote
//
// An operator ported onto this package meets objects its old controller
// wrote under another field manager: kubebuilder's binary name "manager",
// kubectl's, or this package's former default "reconcilekit". To Ensure
// those fields are someone else's, so a container port the old controller
// set and desired renumbers under the same name stays beside the new one,
// and the server refuses the duplicate name (422) on every reconcile.
// [Replaces] lists the managers the operator replaces: on the objects its
// [Owner] controls their entries count as ours, and the first write moves
// them into ours, in the same patch, locked by the resourceVersion:
//
//	drift.Ensure(ctx, c, deployment, drift.Owner(memcached),
//		drift.WithFieldOwner("memcached-operator"), drift.Replaces("manager"))
//
// On other objects (shared ones, or without an Owner) only the fields
// desired sets are taken over, never what another operator may have written
// under the same name. See Replaces for the rules and what it cannot do.
//
// # Fields we wrote before
//
// Comparing only what desired sets cannot see what the reconciler stopped
// wanting: a removed env var, or a container port renumbered under the same
// name (the old port stays next to the new one, and the API server refuses
// the duplicate name). So Diff also reads the live object's
// metadata.managedFields, where the API server records, per field manager
// and operation, the fields each last wrote; every write of Ensure and its
// variants carries the field owner ([WithFieldOwner]), so ownership is
// recorded from the first write (and [Replaces] adds what a replaced
// controller wrote). What we own and desired no longer sets is drift,
// reported with its path
// ("spec.template.spec.containers[name=web].env[name=LOG]"; a list element
// by the key the API server gives it, "ports[containerPort=8080,protocol=TCP]"),
// and the write removes it. The rule, by the operation that recorded it:
//
//   - Apply (server-side apply, [EnsureApplied]) records exactly what was
//     applied: every field, list element and map entry of it counts.
//   - Update (the creates and patches of [Ensure] and [EnsureMutate]) records
//     every field the write changed, and a create changes every field the
//     server defaulted (imagePullPolicy, a port's protocol, a Service's
//     targetPort, a CRD's defaults...). Removing a defaulted field makes
//     the server default it again, and Ensure would then write on every
//     reconcile. So only list elements (keyed or set) and map entries of an
//     Update entry count, never struct fields; the Go type tells which is
//     which. The one default the API server adds as map entries is a Pod's
//     requests copied from its limits: a request whose limit desired sets is
//     never drift.
//   - What another field manager owns, the element or anything beneath it,
//     is never removed: a sidecar another controller added, an env var set
//     with kubectl. Mutating admission (webhooks, LimitRanger) runs after
//     the server records ownership, so what it adds belongs to no one and is
//     never removed either.
//   - Only entries of the main resource (not status) of the live object's
//     apiVersion count; [EnsureApplied] counts only our Apply entry (an apply
//     cannot remove what our Update entry owns).
//
// Detected: for typed objects and for unstructured ones whose kind is in the
// client's scheme (Ensure) or in client-go's (Diff), all of the above. For a
// custom resource the client has no Go type for, only list elements and the
// entries of labels and annotations under Update ownership (a map entry
// cannot be told from a defaulted struct field without a schema); under
// Apply ownership, everything. Not detected: elements inside a list element
// or map entry desired no longer has (the element is removed whole, or kept
// whole when another manager owns part of it); one of two container or
// Service ports with the same number and different protocols, under Ensure
// (a strategic merge patch deletes by number, so both would go; Ensure keeps
// it, EnsureApplied removes it). A converged object still costs no request:
// the decision uses only the object already read. Parsed managedFields are
// memoized by content (bounded; the result never depends on it).
//
// The live object must carry its managedFields, every manager's: ours say
// what we wrote, the others' what we must leave. A cache transform that
// strips them to save memory, such as controller-runtime's
// cache.TransformStripManagedFields, turns all of this off without an
// error: Ensure then compares only what desired sets, as before this
// section. Strip them only for kinds you never pass to Ensure or Diff.
//
// # Ensure or EnsureApplied?
//
// Both read the object (a GET, served by the cache with a manager's client)
// and write nothing when nothing drifted; on drift both send one request.
// They differ in what that request is and how the server treats it.
// BenchmarkEnsure measures both against a real API server, converged and
// drifted: the time of a call, its requests (requests/op) and the bytes of
// its write (body-B/op); run it with
//
//	go test -run '^$' -bench Ensure ./drift/
//
// (it needs the envtest binaries, see the module's README); BENCHMARKS.md
// has the last run's times.
//
//   - Ensure sends a patch of the drifted fields only (strategic merge for
//     built-in types, JSON merge for custom resources, whose lists travel
//     whole and locked by resourceVersion), so its body is small. The
//     server applies it whatever other managers own: a field another
//     controller changed is taken back without a word (a [HotLoopDetector]
//     notices a fight). Its Update ownership includes defaults, so a struct
//     field desired stops setting is left in place (list elements and map
//     entries are removed).
//   - EnsureApplied sends the whole desired object as an apply, a larger
//     body. The server merges it field by field: a field another manager
//     owns is refused with a Conflict naming that manager, unless
//     [ForceOwnership]; and what desired stops setting, scalars included, is
//     removed, since Apply ownership is exact.
//
// Choose Ensure for the smallest writes and CreateOrUpdate-like behaviour;
// choose EnsureApplied when other controllers write the same objects and
// conflicts must be told, or when desired drops struct fields.
//
// # Controller references
//
// [Owner] sets the controller reference with the ownership package's
// SetController: the same references as controller-runtime's
// controllerutil.SetControllerReference, with typed errors (a
// cross-namespace or cluster-scoped mismatch is permanent).
//
// # Performance
//
// Deciding "equal?" runs on every reconcile of a converged object, so Diff
// decides with a lean reflection walk over what desired sets (no go-cmp,
// a couple of small allocations) and only on drift walks again to collect
// paths and explain them, restricted to the drifted fields: each drifted
// value as compact JSON.
//
// go-cmp's comparison is consulted only when you pass [CmpOptions], and only
// then linked into your program. Its reflective method lookups make the Go
// linker keep every exported method of every linked type: the At operator's
// binary is 62 MB with it, 48 MB without, and its resident memory at rest
// 5 MiB larger. A test of the At binary keeps it that way.
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
//	go test -run '^$' -bench Compare -benchmem ./drift/
//
// The verdicts do not depend on the machine, and a test checks them:
// Diff and DeepDerivative call the defaulted object equal, while
// reflect.DeepEqual and cmp.Equal call it different (the server's defaults),
// which is wrong.
package drift
