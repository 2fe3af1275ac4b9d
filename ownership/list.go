package ownership

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IndexField is the name of the field index [IndexOwner] registers: the UID
// of an object's controller.
const IndexField = ".metadata.controllerUID"

// IndexOwner registers, with the manager's field indexer
// (mgr.GetFieldIndexer()), an index of objects of child's type by the UID of
// their controller. Call it once per child type before the manager starts;
// [ListOwned] and [ControlledBy] need it, and [Prune] uses it when it is
// registered.
//
// The index lives in the informer cache: listing through it costs no
// request and no write to the children, but works only with a client that
// reads from that cache (the manager's client), never against the API
// server directly. Children linked with [SetLink] are found by label
// instead ([ListLinked]), which works with any client but puts a label on
// every child.
func IndexOwner(ctx context.Context, indexer client.FieldIndexer, child client.Object) error {
	err := indexer.IndexField(ctx, child, IndexField, ControllerUIDs)
	if err != nil {
		return fmt.Errorf("indexing %T by controller: %w", child, err)
	}
	return nil
}

// ControlledBy selects, through the index registered by [IndexOwner], the
// objects whose controller is owner.
func ControlledBy(owner client.Object) client.ListOption {
	return client.MatchingFields{IndexField: string(owner.GetUID())}
}

// ListOwned fills list with the objects controlled by owner, read through the
// index registered by [IndexOwner] (so c must be the manager's cached
// client), in the owner's namespace when the owner is namespaced. opts narrow
// the list further. Of the listed objects it reads their owner references:
// metadata, which a cache diet keeps, also of the parts diet.Fields keeps.
func ListOwned(ctx context.Context, c client.Reader, owner client.Object, list client.ObjectList, opts ...client.ListOption) error {
	if owner.GetUID() == "" {
		return noUID("listing children of", owner)
	}
	all := []client.ListOption{ControlledBy(owner)}
	if ns := owner.GetNamespace(); ns != "" {
		all = append(all, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, append(all, opts...)...); err != nil {
		return fmt.Errorf("listing children of %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	return filter(list, func(o client.Object) bool { return IsControlledBy(o, owner) })
}

// ControllerUIDs is the client.IndexerFunc behind [IndexField]: the UID of
// obj's controller, or nothing. [IndexOwner] registers it; pass it to
// fake.ClientBuilder.WithIndex to use [ListOwned] with the fake client.
func ControllerUIDs(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.UID != "" {
		return []string{string(ref.UID)}
	}
	return nil
}

// filter keeps the items of list for which keep is true.
func filter(list client.ObjectList, keep func(client.Object) bool) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if o, ok := item.(client.Object); ok && keep(o) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

// objects returns the items of list as client.Objects.
func objects(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(items))
	for _, item := range items {
		o, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("list item %T is not a client.Object", item)
		}
		objs = append(objs, o)
	}
	return objs, nil
}
