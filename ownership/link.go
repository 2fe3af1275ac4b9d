package ownership

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// LinkLabel holds the UID of an object's linked owner. Being a label,
	// it lets [ListLinked] and [LinkedTo] select an owner's linked children
	// on the API server.
	LinkLabel = "ownership.reconcilekit.io/owner-uid"
	// LinkAnnotation names an object's linked owner as
	// "<apiVersion>/<kind>/<namespace>/<name>", for example
	// "example.com/v1/Database/team-a/orders" (the namespace is empty for a
	// cluster-scoped owner). [EnqueueLinkedOwner] reads it.
	LinkAnnotation = "ownership.reconcilekit.io/owner"
)

// Link is the owner an object is linked to with [SetLink].
type Link struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

// GroupKind returns the group and kind of the linked owner.
func (l Link) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind()
}

// SetLink records owner as the controller of obj with a label and an
// annotation, for the children owner references cannot express: objects in
// another namespace than their owner, and cluster-scoped objects with a
// namespaced owner. The garbage collector ignores links: delete such
// children yourself, for example with [Prune] or from a finalizer.
//
// SetLink changes obj only. It returns [*AlreadyOwnedError] when obj is
// linked to another owner (compared by group, kind, namespace and name, as
// owner references are), and [ErrNoUID] (permanent) for an owner without a
// UID.
func SetLink(owner, obj client.Object, scheme *runtime.Scheme) error {
	if owner.GetUID() == "" {
		return noUID("owner", owner)
	}
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return fmt.Errorf("linking %q: %w", client.ObjectKeyFromObject(obj), err)
	}
	want := Link{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: owner.GetNamespace(), Name: owner.GetName(), UID: owner.GetUID()}
	if have, ok := LinkOf(obj); ok && (have.GroupKind() != want.GroupKind() || have.Namespace != want.Namespace || have.Name != want.Name) {
		return &AlreadyOwnedError{Object: obj, Owner: metav1.OwnerReference{
			APIVersion: have.APIVersion, Kind: have.Kind, Name: have.Name, UID: have.UID}}
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LinkLabel] = string(want.UID)
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[LinkAnnotation] = strings.Join([]string{want.APIVersion, want.Kind, want.Namespace, want.Name}, "/")
	obj.SetAnnotations(annotations)
	return nil
}

// LinkOf returns the owner obj is linked to, and false when obj has no
// well-formed link.
func LinkOf(obj client.Object) (Link, bool) {
	value, ok := obj.GetAnnotations()[LinkAnnotation]
	if !ok {
		return Link{}, false
	}
	// apiVersion holds one slash or none; kind, namespace and name none.
	parts := strings.Split(value, "/")
	n := len(parts)
	if n != 4 && n != 5 {
		return Link{}, false
	}
	l := Link{
		APIVersion: strings.Join(parts[:n-3], "/"),
		Kind:       parts[n-3],
		Namespace:  parts[n-2],
		Name:       parts[n-1],
		UID:        types.UID(obj.GetLabels()[LinkLabel]),
	}
	if l.Kind == "" || l.Name == "" || slices.Contains(parts[:n-3], "") {
		return Link{}, false
	}
	return l, true
}

// IsLinkedTo reports whether obj is linked to owner, compared by UID.
func IsLinkedTo(obj, owner client.Object) bool {
	uid, ok := obj.GetLabels()[LinkLabel]
	return ok && uid != "" && types.UID(uid) == owner.GetUID()
}

// LinkedTo selects the objects linked to owner by their [LinkLabel].
func LinkedTo(owner client.Object) client.ListOption {
	return client.MatchingLabels{LinkLabel: string(owner.GetUID())}
}

// ListLinked fills list with the objects linked to owner, in every namespace
// unless opts say otherwise. It selects by label, so it works with any
// client, cached or not.
func ListLinked(ctx context.Context, c client.Reader, owner client.Object, list client.ObjectList, opts ...client.ListOption) error {
	if owner.GetUID() == "" {
		return noUID("listing objects linked to", owner)
	}
	if err := c.List(ctx, list, append([]client.ListOption{LinkedTo(owner)}, opts...)...); err != nil {
		return fmt.Errorf("listing objects linked to %q: %w", client.ObjectKeyFromObject(owner), err)
	}
	return filter(list, func(o client.Object) bool { return IsLinkedTo(o, owner) })
}

// EnqueueLinkedOwner returns an event handler that, for every event on an
// object linked (by [SetLink]) to an owner of the given group and kind,
// enqueues a reconcile request for that owner. On an update whose link
// changed both the old and the new owner are enqueued. Use it where
// handler.EnqueueRequestForOwner cannot see the owner:
//
//	ctrl.NewControllerManagedBy(mgr).For(&v1.Database{}).
//		Watches(&rbacv1.ClusterRole{}, ownership.EnqueueLinkedOwner(v1.GroupVersion.WithKind("Database").GroupKind()))
func EnqueueLinkedOwner(ownerKind schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		l, ok := LinkOf(obj)
		if !ok || l.GroupKind() != ownerKind {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l.Namespace, Name: l.Name}}}
	})
}
