package applyset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/ownership"
)

// The inventory: what the parent's labels and annotations record (KEP-3659),
// and the members found by them.

// inventory is what a parent records of its set: the kinds of its members
// and the namespaces other than its own that hold some.
type inventory struct {
	kinds      []string // GroupKind.String(), sorted
	namespaces []string // sorted
}

// recorded reads the inventory a parent's annotations hold.
func recorded(parent client.Object) inventory {
	a := parent.GetAnnotations()
	return inventory{kinds: splitList(a[GroupKindsAnnotation]), namespaces: splitList(a[NamespacesAnnotation])}
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// inventoryOf returns the inventory of children refs of a parent in
// namespace parentNS.
func inventoryOf(refs []Ref, parentNS string) inventory {
	var inv inventory
	for _, r := range refs {
		inv.kinds = append(inv.kinds, r.GroupKind.String())
		if r.Namespace != "" && r.Namespace != parentNS {
			inv.namespaces = append(inv.namespaces, r.Namespace)
		}
	}
	slices.Sort(inv.kinds)
	inv.kinds = slices.Compact(inv.kinds)
	slices.Sort(inv.namespaces)
	inv.namespaces = slices.Compact(inv.namespaces)
	return inv
}

// parentPatch returns the merge patch that makes the parent record id,
// the Set's tooling and inv, and the paths it writes; no paths when the
// parent records them already.
func (s *Set) parentPatch(parent client.Object, id string, inv inventory) (patch []byte, paths []string, err error) {
	labels := map[string]any{}
	annotations := map[string]any{}
	if parent.GetLabels()[IDLabel] != id {
		labels[IDLabel] = id
	}
	have := parent.GetAnnotations()
	want := map[string]string{
		ToolingAnnotation:    s.tooling(),
		GroupKindsAnnotation: strings.Join(inv.kinds, ","),
		NamespacesAnnotation: strings.Join(inv.namespaces, ","),
	}
	for _, k := range []string{ToolingAnnotation, GroupKindsAnnotation, NamespacesAnnotation} {
		v, ok := have[k]
		switch {
		case k == NamespacesAnnotation && want[k] == "":
			if ok {
				annotations[k] = nil // removed: no other namespace
			}
		case !ok || v != want[k]:
			annotations[k] = want[k]
		}
	}
	for k := range labels {
		paths = append(paths, "metadata.labels["+k+"]")
	}
	for k := range annotations {
		paths = append(paths, "metadata.annotations["+k+"]")
	}
	if len(paths) == 0 {
		return nil, nil, nil
	}
	slices.Sort(paths)
	md := map[string]any{}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	patch, err = json.Marshal(map[string]any{"metadata": md})
	return patch, paths, err
}

// writeParent sends the parent's patch and leaves in parent the labels,
// annotations and resourceVersion the server returned, so that a status
// write of the same reconcile carries the current resourceVersion.
func (s *Set) writeParent(ctx context.Context, parent client.Object, patch []byte) error {
	sent := parent.DeepCopyObject().(client.Object)
	if err := s.client.Patch(ctx, sent, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(s.fieldOwner)); err != nil {
		return fmt.Errorf("applyset: recording the set on %s %q: %w", kindOf(parent, s.client), client.ObjectKeyFromObject(parent), err)
	}
	parent.SetLabels(sent.GetLabels())
	parent.SetAnnotations(sent.GetAnnotations())
	parent.SetResourceVersion(sent.GetResourceVersion())
	parent.SetManagedFields(sent.GetManagedFields())
	return nil
}

// member is an object found with the set's PartOfLabel.
type member struct {
	ref Ref
	obj client.Object // as the reader returned it: read only
}

// listMembers lists the objects of the kinds that carry the PartOfLabel
// id, in every namespace. A kind that is not installed has none.
func (s *Set) listMembers(ctx context.Context, id string, kinds []schema.GroupKind) ([]member, error) {
	var out []member
	for _, gk := range kinds {
		mapping, err := s.client.RESTMapper().RESTMapping(gk)
		if notInstalled(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("applyset: listing the set's %s: %w", gk, err)
		}
		list, err := s.newList(mapping.GroupVersionKind)
		if err != nil {
			return nil, err
		}
		if err := s.client.List(ctx, list, client.MatchingLabels{PartOfLabel: id}, client.UnsafeDisableDeepCopy); err != nil {
			if notInstalled(err) {
				continue
			}
			return nil, fmt.Errorf("applyset: listing the set's %s: %w", gk, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(client.Object)
			if !ok {
				return fmt.Errorf("applyset: a %s of the list is a %T", gk, o)
			}
			// The list selects by label; a cache that ignores the
			// selector must not make members of other objects.
			if obj.GetLabels()[PartOfLabel] == id {
				out = append(out, member{ref: Ref{GroupKind: gk, Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj: obj})
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b member) int { return compareRefs(a.ref, b.ref) })
	return out, nil
}

// newList returns an empty list of gvk: the typed list when the client's
// scheme has one (so that a cached client reads the informer the
// controller's own watch of the kind fills), unstructured otherwise.
func (s *Set) newList(gvk schema.GroupVersionKind) (client.ObjectList, error) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if o, err := s.client.Scheme().New(listGVK); err == nil {
		if l, ok := o.(client.ObjectList); ok {
			return l, nil
		}
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(listGVK)
	return u, nil
}

// ours reports whether a member may be pruned: the Set's field owner wrote
// its PartOfLabel, and no owner other than parent controls it or links it.
func (s *Set) ours(m member, parent client.Object) bool {
	if ref := metav1.GetControllerOfNoCopy(m.obj); ref != nil && ref.UID != parent.GetUID() {
		return false
	}
	if l, ok := ownership.LinkOf(m.obj); ok && l.UID != parent.GetUID() {
		return false
	}
	return wrote(m.obj, s.fieldOwner)
}
