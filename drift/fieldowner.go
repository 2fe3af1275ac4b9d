package drift

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrNoFieldOwner is returned, wrapped and classed permanent
// (errors.Permanent, so also a controller-runtime terminal error), by
// [Ensure], [EnsureMutate] and [EnsureApplied] called without
// [WithFieldOwner]: they write nothing and read nothing. There is no default
// name: one shared by every operator on this package would make each take
// the others' fields for its own and remove them.
var ErrNoFieldOwner = errors.New("drift: no field owner")

// WithFieldOwner names the operator: the field manager of every write
// [Ensure], [EnsureMutate] and [EnsureApplied] send (creates, patches and
// applies), under which the API server records in metadata.managedFields
// which fields it set; and whose entries there [Diff] and Ensure take for
// "fields we wrote before" (see the package documentation): a field, list
// element or map entry this name wrote that desired no longer sets is drift.
//
// Ensure and its variants require it: without it, or with an empty name,
// they return [ErrNoFieldOwner]. Use one name per operator, the same for
// all its writes (the status writes and finalizer patches of the status and
// finalizer packages take it too; reconcile.Loop.FieldOwner passes it to
// both), and never a name another controller uses. Diff without it compares
// only what desired sets.
func WithFieldOwner(name string) Option {
	return func(c *config) { c.diff.fieldOwner = name }
}

// Replaces names field managers whose fields this operator takes over: the
// controller it replaces (kubebuilder binaries write as "manager"), kubectl
// ("kubectl-client-side-apply", "kubectl-edit"), or its own former name,
// such as "reconcilekit", this package's default before WithFieldOwner was
// required. Their entries in metadata.managedFields then count as ours, and
// the first write of [Ensure], [EnsureMutate] or [EnsureApplied] moves them
// into our entry, so that "fields we wrote before" covers them from then on:
// a container port the old controller set and desired renumbers is replaced
// rather than kept beside the new one.
//
// What is taken depends on whose the object is:
//
//   - An object the [Owner] given to the same call controls (its controller
//     reference has the owner's UID): a child of this operator. The
//     replaced managers' entries are ours whole: what they wrote and
//     desired no longer sets is drift, by the rules of our own entries
//     (list elements and map entries of an Update entry, anything of an
//     Apply entry), and the write removes it.
//   - Any other object (no Owner, or an object shared with other
//     operators): only the fields desired sets now are taken over; the
//     rest stays the replaced manager's, since under a name several
//     operators shared it may be another's. Nothing of theirs is removed,
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
// objects the old controller wrote may exist.
//
// Only entries of the main resource (not status) in the live object's
// apiVersion are taken. A name listed here means this operator on every
// object its Owner controls: do not list a name another controller also
// writes your children with. Diff ignores Replaces.
func Replaces(managers ...string) Option {
	return func(c *config) {
		for _, m := range managers {
			if m != "" && !slices.Contains(c.replaces, m) {
				c.replaces = append(c.replaces, m)
			}
		}
	}
}

// checkFieldOwner returns the error of a write without a field owner.
func (c *config) checkFieldOwner(verb string, obj client.Object) error {
	if c.diff.fieldOwner != "" {
		return nil
	}
	return errors.Permanent(fmt.Errorf("%w: %s %s: pass drift.WithFieldOwner(name), the operator's own name, the same for all its writes",
		ErrNoFieldOwner, verb, describe(obj)))
}

// describe names an object for an error: "namespace/name" or "name".
func describe(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%q", ns+"/"+obj.GetName())
	}
	return fmt.Sprintf("%q", obj.GetName())
}

// replacedSet is the names of Replaces as one comparable string, for the
// owned-fields query and its memo.
func replacedSet(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(s, "\x00")
}

// replacedHas reports whether name is one of the names in set (see
// replacedSet), without allocating.
func replacedHas(set, name string) bool {
	for set != "" {
		var n string
		n, set, _ = strings.Cut(set, "\x00")
		if n == name {
			return true
		}
	}
	return false
}
