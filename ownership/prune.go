package ownership

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option changes how [Prune] lists and deletes.
type Option func(*options)

type options struct {
	propagation metav1.DeletionPropagation
	listOptions []client.ListOption
}

// WithPropagation sets the propagation policy of Prune's deletes. The
// default is metav1.DeletePropagationBackground: the child goes at once and
// the garbage collector removes its own dependents afterwards.
func WithPropagation(p metav1.DeletionPropagation) Option {
	return func(o *options) { o.propagation = p }
}

// WithListOptions sets the options of Prune's list, replacing the default
// (the owner's namespace when the owner is namespaced, every namespace
// otherwise). Pass [ControlledBy] to list through the [IndexOwner] index,
// [LinkedTo] to list linked children in every namespace.
func WithListOptions(opts ...client.ListOption) Option {
	return func(o *options) { o.listOptions = opts }
}

// Prune deletes owner's children that are no longer desired: it lists
// objects into list (see [WithListOptions]), and deletes each one that owner
// controls ([IsControlledBy]) or is linked to ([IsLinkedTo]), is not already
// being deleted, and for which keep returns false. Every other object,
// including those controlled by someone else or merely owned by owner
// through a non-controller reference, is never touched.
//
// Each delete carries the child's UID and resourceVersion as preconditions,
// so a child that changed since it was listed (re-parented, recreated under
// the same name) is left alone and reported as a Conflict; a child that is
// already gone is skipped. Prune returns the children it deleted, in list
// order, and the errors of the deletes that failed, joined.
func Prune(ctx context.Context, c client.Client, owner client.Object, list client.ObjectList, keep func(client.Object) bool, opts ...Option) ([]client.Object, error) {
	if keep == nil {
		return nil, errors.New("ownership: prune: keep func is nil")
	}
	if owner.GetUID() == "" {
		return nil, fmt.Errorf("pruning children of %q: %w", client.ObjectKeyFromObject(owner), ErrNoUID)
	}
	o := options{propagation: metav1.DeletePropagationBackground}
	if ns := owner.GetNamespace(); ns != "" {
		o.listOptions = []client.ListOption{client.InNamespace(ns)}
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := c.List(ctx, list, o.listOptions...); err != nil {
		return nil, fmt.Errorf("pruning children of %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	children, err := objects(list)
	if err != nil {
		return nil, fmt.Errorf("pruning children of %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	var deleted []client.Object
	var errs []error
	for _, child := range children {
		if !IsControlledBy(child, owner) && !IsLinkedTo(child, owner) {
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
