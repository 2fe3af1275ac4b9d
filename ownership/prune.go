package ownership

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Option changes how [Prune] and [PruneListed] find and delete children.
type Option func(*options)

type options struct {
	propagation   metav1.DeletionPropagation
	listOptions   []client.ListOption
	allNamespaces bool
}

func newOptions(opts []Option) options {
	o := options{propagation: metav1.DeletePropagationBackground}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithPropagation sets the propagation policy of the deletes:
// metav1.DeletePropagationOrphan, DeletePropagationBackground or
// DeletePropagationForeground; any other value makes [Prune] and
// [PruneListed] fail with [ErrInvalidPrune] before they list or delete
// anything. The default is metav1.DeletePropagationBackground: the child
// goes at once and the garbage collector removes its own dependents
// afterwards.
func WithPropagation(p metav1.DeletionPropagation) Option {
	return func(o *options) { o.propagation = p }
}

// WithListOptions adds opts to [Prune]'s list: a label selector to narrow
// it, or [LinkedTo] to find the children linked to the owner. They add to
// the default, the owner's namespace, and to each other when given more
// than once; a client.InNamespace among them lists that namespace instead
// (the last namespace given wins, as in any controller-runtime list), and
// [InAllNamespaces] lists every namespace. [ControlledBy] is not needed:
// Prune uses the [IndexOwner] index by itself when one is registered.
// [PruneListed] lists nothing and ignores them.
func WithListOptions(opts ...client.ListOption) Option {
	return func(o *options) { o.listOptions = append(o.listOptions, opts...) }
}

// InAllNamespaces makes [Prune] list every namespace instead of the
// owner's: for children linked ([SetLink]) from other namespaces, with
// WithListOptions([LinkedTo](owner)). The children of a cluster-scoped
// owner are listed in every namespace without it.
func InAllNamespaces() Option {
	return func(o *options) { o.allNamespaces = true }
}

// Prune deletes owner's children that are no longer desired: it lists
// candidates into list and deletes each child that owner controls
// ([IsControlledBy]), is not already being deleted, and for which keep
// returns false. Children linked to owner ([SetLink]) are pruned too when
// the list selects them, with WithListOptions([LinkedTo](owner)). Every
// other object, including those controlled by someone else or merely
// owned by owner through a non-controller reference, is never touched.
//
// The list is of the owner's namespace when the owner is namespaced, of
// every namespace otherwise or with [InAllNamespaces]; [WithListOptions]
// adds to it. When the [IndexOwner] index is registered for the child type
// and c reads from the manager's cache, Prune lists through the index: only
// the owner's children are read, from the cache, and no request reaches
// the API server. Prune detects the index by using it, so there is nothing
// to configure: when it does not exist, the cache refuses the indexed list
// and Prune lists the whole namespace instead, with the same result. A
// client that reads from the API server directly never has the index; the
// server refuses the indexed list (400 Bad Request) and Prune lists again
// without it, one request more than a plain list: such callers list
// themselves and use [PruneListed]. Prune does not use the index when the
// caller's options carry a field selector of their own or select linked
// children.
//
// Each delete carries the child's UID and resourceVersion as preconditions,
// so a child that changed since it was listed (re-parented, recreated under
// the same name) is left alone and reported as a Conflict; a child that is
// already gone is skipped. Prune returns the children it deleted, in list
// order, and the errors of the deletes that failed, joined. A call that
// cannot run (a nil keep, an unknown propagation policy, an owner without
// a UID) fails at once with a permanent error wrapping [ErrInvalidPrune] or
// [ErrNoUID], before any request.
//
// What it reads of the listed objects: owner references, labels, UID,
// resourceVersion and deletionTimestamp (metadata, which a cache diet keeps),
// and whatever keep reads.
func Prune(ctx context.Context, c client.Client, owner client.Object, list client.ObjectList, keep func(client.Object) bool, opts ...Option) ([]client.Object, error) {
	o := newOptions(opts)
	if err := validatePrune(owner, keep, o); err != nil {
		return nil, err
	}
	linked, err := listChildren(ctx, c, owner, list, o)
	if err != nil {
		return nil, fmt.Errorf("pruning children of %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	return prune(ctx, c, owner, list, keep, linked, o)
}

// PruneListed is [Prune] for a reconciler that has listed owner's children
// already (to count them, or to read their status): it deletes the
// children in list that owner controls or is linked to, that are not
// already being deleted and that keep does not want, with the same
// preconditions as Prune, and sends no list of its own. Options other than
// [WithPropagation] have no effect.
func PruneListed(ctx context.Context, c client.Writer, owner client.Object, list client.ObjectList, keep func(client.Object) bool, opts ...Option) ([]client.Object, error) {
	o := newOptions(opts)
	if err := validatePrune(owner, keep, o); err != nil {
		return nil, err
	}
	return prune(ctx, c, owner, list, keep, true, o)
}

// validatePrune reports a prune that cannot run, as a permanent error
// wrapping [ErrInvalidPrune] or [ErrNoUID].
func validatePrune(owner client.Object, keep func(client.Object) bool, o options) error {
	if keep == nil {
		return errors.Permanent(fmt.Errorf("%w: keep func is nil", ErrInvalidPrune))
	}
	switch o.propagation {
	case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
	default:
		return errors.Permanent(fmt.Errorf("%w: propagation policy %q is none of %s, %s and %s", ErrInvalidPrune, o.propagation,
			metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground))
	}
	if owner.GetUID() == "" {
		return noUID("pruning children of", owner)
	}
	return nil
}

// listChildren fills list with the candidates for pruning: through the
// owner index when it exists and the options allow it, else with a plain
// list. It reports whether the options select linked children.
func listChildren(ctx context.Context, c client.Reader, owner client.Object, list client.ObjectList, o options) (linked bool, err error) {
	var opts []client.ListOption
	if ns := owner.GetNamespace(); ns != "" && !o.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	opts = append(opts, o.listOptions...)
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	linked = selectsLinks(lo)
	if lo.FieldSelector == nil && !linked {
		// A cache serves one indexed field per list, and linked children
		// have no controller reference for the index to find.
		err := c.List(ctx, list, append(opts, ControlledBy(owner))...)
		if err == nil || !missingIndex(err) {
			return false, err
		}
	}
	return linked, c.List(ctx, list, opts...)
}

// selectsLinks reports whether the list options select by [LinkLabel].
func selectsLinks(lo client.ListOptions) bool {
	if lo.LabelSelector == nil {
		return false
	}
	reqs, _ := lo.LabelSelector.Requirements()
	for _, r := range reqs {
		if r.Key() == LinkLabel {
			return true
		}
	}
	return false
}

// missingIndex reports whether err is a refusal of a list through the
// owner index because the index does not exist: the informer cache's and
// the fake client's error naming it, or the API server's Bad Request for a
// field it cannot select on.
func missingIndex(err error) bool {
	if apierrors.IsBadRequest(err) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "index with name") && strings.Contains(msg, strings.ToLower(IndexField))
}

// prune deletes the children in list that owner controls (or, with linked,
// is linked to) and keep does not want.
func prune(ctx context.Context, c client.Writer, owner client.Object, list client.ObjectList, keep func(client.Object) bool, linked bool, o options) ([]client.Object, error) {
	children, err := objects(list)
	if err != nil {
		return nil, fmt.Errorf("pruning children of %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	var deleted []client.Object
	var errs []error
	for _, child := range children {
		if !IsControlledBy(child, owner) && (!linked || !IsLinkedTo(child, owner)) {
			continue
		}
		if !child.GetDeletionTimestamp().IsZero() || keep(child) {
			continue
		}
		uid, rv := child.GetUID(), child.GetResourceVersion()
		err := c.Delete(ctx, child,
			client.PropagationPolicy(o.propagation),
			client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			deleted = append(deleted, child)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("pruning %q: %w", client.ObjectKeyFromObject(child), err))
		}
	}
	return deleted, errors.Join(errs...)
}
