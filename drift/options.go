package drift

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/compare"
)

// Option configures one call of a [Writer]'s Ensure, EnsureMutate,
// EnsureApplied or EnsureApplyConfiguration: what the write does ([Owner], [Replaces],
// [OptimisticLock], [ForceOwnership]) and how the live object is compared
// ([CompareOptions]). Options are plain values: build them once and reuse
// them. What lasts longer than a call (the client, the field owner, the
// hot-loop detector, the clock) belongs to the Writer.
type Option func(*config)

// config is the resolved set of Options.
type config struct {
	compare        []compare.Option
	owner          client.Object
	optimisticLock bool
	force          bool
	replaces       []string // Replaces
	adopt          bool     // Adopt
}

// newConfig resolves the options of a call.
func newConfig(opts []Option) *config {
	cfg := &config{}
	for _, o := range opts {
		o(cfg)
	}
	return cfg
}

// CompareOptions adds options of package compare to the comparison of the
// desired object with the live one: [compare.IgnorePaths], [compare.Own],
// [compare.ListKey], [compare.CmpOptions], [compare.Rules], ... They
// compare by the same rules as [compare.Diff]. A Writer adds its own after
// them: its field owner ([compare.WithFieldOwner]), its client's scheme, the
// built-in [compare.KubernetesRules], owner references with [Owner], and
// [compare.IgnoreStatus]: status belongs to the status subresource, and a
// Writer never compares or writes it, whatever the options say.
func CompareOptions(opts ...compare.Option) Option {
	return func(c *config) { c.compare = append(c.compare, opts...) }
}

// Owner makes the owner the controller of the ensured object: the object is
// created with a controller reference to owner, and an existing object
// without one gets it patched in when the object is the operator's (its
// field owner, or a manager of [Replaces], wrote it before) or the call
// [Adopt]s it. An object another owner controls or links is refused with a
// [*ForeignError], and so is, without Adopt, one somebody else created.
// owner must be in the client's scheme and, for a namespaced object, be
// cluster-scoped or in the same namespace.
func Owner(owner client.Object) Option {
	return func(c *config) { c.owner = owner }
}

// OptimisticLock makes patches carry the live object's resourceVersion, so a
// patch fails with a Conflict when someone else wrote the object between the
// read and the write. Without it the patch touches only the drifted fields,
// which is safe without a lock for fields, maps and, in strategic merge
// patches of built-in types, keyed lists; a JSON merge patch (custom
// resources, unstructured objects) that carries a list replaces the list
// whole, so Ensure locks such a patch even without this option.
// [Writer.EnsureApplied] ignores it: server-side apply detects conflicting
// writers per field.
func OptimisticLock() Option {
	return func(c *config) { c.optimisticLock = true }
}

// ForceOwnership makes [Writer.EnsureApplied] and
// [Writer.EnsureApplyConfiguration] take over fields another field manager
// owns instead of failing with a conflict.
func ForceOwnership() Option {
	return func(c *config) { c.force = true }
}

// Replaces names field managers whose fields this operator takes over: the
// controller it replaces (kubebuilder binaries write as "manager"), kubectl
// ("kubectl-client-side-apply", "kubectl-edit"), or its own former name,
// such as "reconcilekit", this package's default before the field owner was
// required. Their entries in metadata.managedFields then count as ours, and
// the first write of [Writer.Ensure], [Writer.EnsureMutate] or
// [Writer.EnsureApplied] moves them into our entry, so that "fields we
// wrote before" covers them from then on: a container port the old
// controller set and desired renumbers is replaced rather than kept beside
// the new one.
//
// What is taken depends on whose the object is:
//
//   - An object the [Owner] given to the same call controls (its controller
//     reference has the owner's UID): a child of this operator. The
//     replaced managers' entries are ours whole ([compare.Replaces]): what
//     they wrote and desired no longer sets is drift, by the rules of our
//     own entries (list elements and map entries of an Update entry,
//     anything of an Apply entry), and the write removes it.
//   - Any other object (no Owner, or an object shared with other
//     operators): only the fields desired sets now are taken over (what
//     the call's comparison counts as set: in unstructured content a key
//     present with a zero value too, and list elements found by the
//     call's KeyDefault rules); the rest stays the replaced manager's,
//     since under a name several operators shared it may be another's. Nothing of theirs is removed,
//     and nothing we stopped wanting before the move can be told apart.
//
// The takeover is one write: Ensure and EnsureMutate send the rewritten
// metadata.managedFields in the patch that carries the drift, locked by the
// resourceVersion (a concurrent writer makes it fail with a Conflict, and
// the next reconcile starts over). EnsureApplied cannot: an apply request
// carries no managedFields, so it sends a JSON patch of managedFields
// (locked the same way) before the apply, and moves the replaced entries
// into its Apply entry, as client-go's csaupgrade.UpgradeManagedFields does;
// the apply then releases what desired does not set, and the server
// defaults again what it defaults. Nothing is taken without a write: an
// object that has not drifted keeps the replaced entries, still read as
// ours while Replaces lists them, and costs no request. Keep Replaces while
// objects the old controller wrote may exist. With a cache on the diet,
// pass the same names to diet.Replaces: it keeps an object's managedFields
// whole while a replaced entry is there, and the takeover, which writes
// the whole list, needs every entry (another manager's that does not touch
// the operator's fields included, or the takeover drops it).
//
// Only entries of the main resource (not status) in the live object's
// apiVersion are taken. A name listed here means this operator on every
// object its Owner controls: do not list a name another controller also
// writes your children with.
func Replaces(managers ...string) Option {
	return func(c *config) {
		for _, m := range managers {
			if m != "" && !slices.Contains(c.replaces, m) {
				c.replaces = append(c.replaces, m)
			}
		}
	}
}
