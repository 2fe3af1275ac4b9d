// Package compare is the comparison engine of desired Kubernetes objects
// against live ones: [Diff] says whether the live object already has
// everything the desired one sets and, when not, which fields drifted and
// how, and [Overlay] writes that drift into a copy of the live object. It is
// a pure function of desired, actual and options: no client, no clock, no
// metrics, no global scheme. Package drift builds its writers (Ensure,
// EnsureApplied, hot-loop detection) on it; use compare alone to decide or
// explain without writing, in tests, admission webhooks or tools.
//
// A reconciler that compares with reflect.DeepEqual never converges against
// a real API server: the server fills in defaults (imagePullPolicy,
// terminationMessagePath, revisionHistoryLimit, ...), so every reconcile sees
// a difference. Diff compares only what the desired object sets, ignores
// server-managed metadata and status, compares quantities and times by
// value, and matches list elements by key (containers by name, ports by
// containerPort, ...). What the field owner wrote before and desired no
// longer sets is drift too (see "Fields we wrote before"). Its [Comparison]
// says whether anything drifted, which fields
// ("spec.template.spec.containers[name=web].image"), and shows a readable
// diff (-actual +desired) for logs and events:
//
//	c, err := compare.Diff(desired, live, compare.Rules(compare.KubernetesRules()...),
//		compare.WithFieldOwner("app-controller"), compare.WithScheme(scheme))
//
// [IgnorePaths], [IncludeStatus], [IgnoreStatus],
// [IncludeOwnerReferences], [Own], [ListKey] and [CmpOptions] say how to
// compare; [WithFieldOwner], [Replaces] and [OnlyApplied] say which fields
// of managedFields are ours, and [StrategicMerge] which of them a strategic
// merge patch can remove; [WithScheme] says where kinds are looked up;
// [Rules] pass what the API server defaults that neither Go types nor JSON
// show.
//
// # Why "compare"
//
// The package is named after what it does, compare, rather than after one
// of its results: it decides equality far more often than it explains a
// difference (every reconcile of a converged object decides; only drift is
// explained), and a package named diff would make its main function
// diff.Diff and take the name of the variable every caller holds its
// result in.
//
// # Rules, not kinds
//
// The walk knows Go types, JSON and the apimachinery value types (Quantity,
// Time, MicroTime, IntOrString); it knows no kind of object. What the API
// server does to particular kinds that the types do not show is a [Rule]
// passed in: a port's protocol that defaults to TCP and keys the port list
// with its number ([KeyDefault]), a Pod's requests copied from its limits
// ([CopiedDefault]). [KubernetesRules] are the rules of the built-in API;
// package drift passes them to every comparison it makes.
//
// # Fields we wrote before
//
// Comparing only what desired sets cannot see what the reconciler stopped
// wanting: a removed env var, or a container port renumbered under the same
// name (the old port stays next to the new one, and the API server refuses
// the duplicate name). So Diff also reads the actual object's
// metadata.managedFields, where the API server records, per field manager
// and operation, the fields each last wrote, and takes the entries of
// [WithFieldOwner]'s name (and of the managers [Replaces] names) for ours.
// What we own and desired no longer sets is drift, reported with its path
// ("spec.template.spec.containers[name=web].env[name=LOG]"; a list element
// by the key the API server gives it, "ports[containerPort=8080,protocol=TCP]"),
// and Overlay removes it. The rule, by the operation that recorded it:
//
//   - Apply (server-side apply) records exactly what was applied: every
//     field, list element and map entry of it counts.
//   - Update (creates and patches) records every field the write changed,
//     and a create changes every field the server defaulted
//     (imagePullPolicy, a port's protocol, a Service's targetPort, a CRD's
//     defaults...). Removing a defaulted field makes the server default it
//     again, and a writer would then write on every reconcile. So only list
//     elements (keyed or set) and map entries of an Update entry count,
//     never struct fields; the Go type tells which is which. A default the
//     API server adds as map entries is a [CopiedDefault] (a Pod's requests
//     copied from its limits): such an entry is never drift.
//   - What another field manager owns, the element or anything beneath it,
//     is never removed: a sidecar another controller added, an env var set
//     with kubectl. Mutating admission (webhooks, LimitRanger) runs after
//     the server records ownership, so what it adds belongs to no one and is
//     never removed either.
//   - Only entries of the main resource (not status) of the actual object's
//     apiVersion count; with [OnlyApplied], only our Apply entry (an apply
//     cannot remove what our Update entry owns).
//
// Detected: for typed objects and for unstructured ones whose kind is in
// the [WithScheme] scheme, all of the above. For a custom resource without
// a Go type there, only list elements and the entries of labels and
// annotations under Update ownership (a map entry cannot be told from a
// defaulted struct field without a schema); under Apply ownership,
// everything. Not detected: elements inside a list element or map entry
// desired no longer has (the element is removed whole, or kept whole when
// another manager owns part of it); one of two container or Service ports
// with the same number and different protocols, under [StrategicMerge] (a
// strategic merge patch deletes by number, so both would go). The decision
// uses only the object passed in. Parsed managedFields are memoized by
// content (bounded; the result never depends on it).
//
// The actual object must carry our managedFields entries and those of every
// other manager that owns a field at or beneath one of ours: ours say what
// we wrote, the others' what we must leave; no other entry changes the
// result. Package diet's ManagedFields keeps exactly these in a cache and
// drops the rest. A cache transform that strips them all, such as
// controller-runtime's cache.TransformStripManagedFields, turns all of this
// off without an error: Diff then compares only what desired sets.
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
// against the server by a test of package drift): Diff of the whole object
// and of its spec, against equality.Semantic.DeepDerivative,
// reflect.DeepEqual, cmp.Equal with cmpopts.EquateEmpty and cmp.Diff, once
// on the equal path (desired against its defaulted form) and once with a
// changed image. The figures of the last run, with the machine they ran on,
// are in BENCHMARKS.md at the root of the module (make bench regenerates
// it); run them yourself with
//
//	go test -run '^$' -bench Compare -benchmem ./compare/
//
// The verdicts do not depend on the machine, and a test checks them:
// Diff and DeepDerivative call the defaulted object equal, while
// reflect.DeepEqual and cmp.Equal call it different (the server's defaults),
// which is wrong.
package compare
