// Package drift writes desired objects to the API server only when they
// drifted, and explains itself: the writers above the comparison engine of
// package compare.
//
// A reconciler that compares with reflect.DeepEqual, or that calls
// controllerutil.CreateOrUpdate with a mutate function, never converges
// against a real API server: the server fills in defaults (imagePullPolicy,
// terminationMessagePath, revisionHistoryLimit, ...), so every reconcile
// sees a difference and writes. This package is the fix:
//
//   - A [Writer], built with [NewWriter] from a client and the operator's
//     field owner, writes as that field manager. [Writer.Ensure] gets the
//     live object, creates it when missing, does nothing when nothing
//     drifted, and otherwise sends one patch carrying only the drifted
//     fields. It reports an [Operation] (created, updated, unchanged) and
//     the drift. [Writer.EnsureMutate] keeps the shape of CreateOrUpdate for
//     code migrating from it; [Writer.EnsureApplied] uses server-side apply
//     and also skips the request when nothing drifted, and
//     [Writer.EnsureApplyConfiguration] does the same with a generated
//     apply configuration (see "Apply configurations"). [Writer.Plan] says
//     what Ensure would do, and sends no write.
//   - The comparison is [compare.Diff]'s: only what desired sets, server
//     defaults and other writers' fields left alone, list elements matched
//     by key, and what the field owner wrote before and desired no longer
//     sets removed (package compare, "Fields we wrote before"). A Writer
//     passes it the built-in [compare.KubernetesRules] and its client's
//     scheme.
//   - A [HotLoopDetector], set as the Writer's HotLoops, notices when the
//     same fields keep drifting back (another controller or a mutating
//     webhook fights the reconciler), stops patching for a while, records a
//     Warning event naming the fields and logs once, instead of writing
//     forever.
//
// The client and the field owner are arguments of NewWriter, because no
// write can do without them; what lasts (HotLoops, Clock) are fields of the
// Writer whose zero values work; what one call needs are its [Option]
// values: [Owner], [Replaces], [OptimisticLock] and [ForceOwnership] shape
// the write, and [CompareOptions] passes options of package compare:
//
//	w := drift.NewWriter(c, "app-controller")
//	out, err := w.Ensure(ctx, deployment, drift.Owner(app))
//
// The package does not write status: that is the status subresource's job.
// It does not delete objects (package ownership prunes children). The
// comparison's zero-means-unset rule cannot express "this field must be
// cleared" for a non-pointer scalar desired never set; use a pointer field,
// or [compare.Own] for maps and lists.
//
// # One field owner
//
// Every write a Writer sends (creates, patches, applies, and the
// managedFields patch of [Replaces]) carries the field owner NewWriter got,
// and no write goes out under a name shared by every user of the package:
// there is no default. A Writer built with an empty name sends nothing and
// returns an error wrapping [errors.ErrNoFieldOwner], classed permanent
// ([Writer.Validate] says so at setup). The status and finalizer packages
// follow the same rule, and reconcile.Loop passes its one field owner to
// both: give the Writer the same name, so that the API server records one
// field manager per operator. Deleting carries no field manager (a DELETE
// has none): package ownership's Prune sends plain deletes.
//
// The name is whose fields are "ours". Two operators sharing one name, as
// every operator on this package did while Ensure defaulted to
// "reconcilekit", each take the other's labels, annotations and list
// elements on a shared object for fields they wrote before, and remove
// them: they fight for ever.
//
// # Adopting what another controller wrote
//
// An operator ported onto this package meets objects its old controller
// wrote under another field manager: kubebuilder's binary name "manager",
// kubectl's, or this package's former default "reconcilekit". To a Writer
// those fields are someone else's, so a container port the old controller
// set and desired renumbers under the same name stays beside the new one,
// and the server refuses the duplicate name (422) on every reconcile.
// [Replaces] lists the managers the operator replaces: on the objects its
// [Owner] controls their entries count as ours, and the first write moves
// them into ours, in the same patch, locked by the resourceVersion:
//
//	drift.NewWriter(c, "memcached-operator").Ensure(ctx, deployment,
//		drift.Owner(memcached), drift.Replaces("manager"))
//
// On other objects (shared ones, or without an Owner) only the fields
// desired sets are taken over, never what another operator may have written
// under the same name. See Replaces for the rules and what it cannot do.
//
// # Whose object it is
//
// Create or patch by name meets objects somebody else made under that name:
// a user's Secret where a mirror operator means to write its copy, a
// ConfigMap another operator controls. Before a Writer writes to an existing
// object it checks that the object is the caller's: controlled (owner
// reference) or linked (ownership.SetLink) by the owner desired names, or
// written before by the Writer's field owner or a manager of [Replaces] (its
// entry in metadata.managedFields). Anything else is left untouched and the
// call returns a [*ForeignError], permanent, with reason [ReasonForeignObject]:
// a reconcile.Loop shows it as Stalled, naming the object:
//
//	drift: Secret "team-b/db-credentials" exists and is not ours: no owner controls it and
//	field manager "mirror-controller" never wrote it; left as it is (drift.Adopt takes such an object over)
//
// [Adopt] opts in to taking over an object that no owner controls or links
// (a resource a user created for the operator to manage). An object another
// owner controls or links is never taken from it while desired names an
// owner of its own. An object that already has what desired sets needs no
// write and is not refused. An object read without managedFields (a cache
// that strips them, a fake client without WithReturnManagedFields) cannot
// show who wrote it; for it only owner references and links decide, as
// before.
//
// # What a Writer's field owner wrote before
//
// Ensure and EnsureMutate write Update operations, EnsureApplied an Apply,
// and the API server records each in metadata.managedFields under the
// Writer's field owner. The comparison reads that entry (package compare,
// "Fields we wrote before"): a list element or map entry Ensure wrote, or
// any field EnsureApplied applied, that desired no longer sets and no other
// manager owns is drift, and the write removes it. EnsureApplied counts
// only its Apply entry (an apply cannot remove what an Update entry owns,
// [compare.OnlyApplied]). Ensure keeps one of two container or Service
// ports with the same number and different protocols (a strategic merge
// patch deletes by number, so both would go, [compare.StrategicMerge]);
// EnsureApplied removes it.
//
// The live object must carry its field owner's managedFields entries and
// those of other managers on the same fields. diet.ManagedFields keeps
// exactly these in a manager's caches and drops the rest (the status
// entries, the creator's, everyone's on other fields), about a third of what a
// cache holds of a custom resource with conditions. A transform that strips
// them all, such as controller-runtime's cache.TransformStripManagedFields,
// turns removals off without an error: a Writer then compares only what
// desired sets. A converged object still costs no request: the decision
// uses only the object already read, from the cache and without a copy. An
// object the cache keeps in part (diet.Fields) is read whole from the
// Writer's APIReader before it is compared, or refused without one
// (diet.ErrPartial).
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
// conflicts must be told, or when desired drops struct fields; and then
// prefer EnsureApplyConfiguration, below.
//
// # Apply configurations
//
// Server-side apply owns exactly the fields a request sends, so what it
// sends must be exactly what the operator means to own. A plain Go struct
// cannot say that: a field without omitempty is present with its zero
// value. EnsureApplied prunes nulls and empty maps and lists from the
// converted object, but a zero scalar stays: a Service port without a
// targetPort is sent as targetPort 0 (an IntOrString has no "unset"), a
// custom resource's int32 without omitempty as 0. The Writer's field owner
// then claims the field; once another manager sets it, every apply
// conflicts with that manager, or with [ForceOwnership] puts the zero back
// (TestSSAZeroValueTrap shows both on a real API server). This is the
// zero-value trap of typed server-side apply.
//
// Generated apply configurations have no such trap: every field is a
// pointer, set only by its With method, so a field left alone is not sent
// and an explicit zero is. client-go has them for the built-in kinds
// (k8s.io/client-go/applyconfigurations), and controller-gen's
// applyconfiguration generator writes them for a project's own types
// (kubebuilder's create api --ssa adds its markers). [Writer.EnsureApplyConfiguration]
// takes them, compares exactly what they set with the live object and
// applies only on drift:
//
//	dep := appsv1ac.Deployment(app.Name, app.Namespace).
//		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(app.Spec.Replicas) /* ... */)
//	out, err := drift.NewWriter(c, "app-controller").EnsureApplyConfiguration(ctx, dep, drift.Owner(app))
//
// A converged call sends nothing, and what an earlier apply set that the
// configuration no longer sets is removed, as with EnsureApplied. The
// comparison works on the unstructured content the apply would send, so a
// converged call costs the conversion of the live object too: in
// BenchmarkEnsure it allocates about three times what EnsureApplied's does
// (its GET dominates the time either way), and drift paths are written in
// the unstructured form ("metadata.annotations.team").
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
// A converged object costs one read (from the cache, with a manager's
// client) and one comparison, which package compare makes with a lean walk
// and a couple of small allocations (see its benchmarks); BenchmarkEnsure
// above measures the whole call.
package drift
