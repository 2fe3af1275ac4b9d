package drift

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// Whose an existing object is, decided before a Writer writes to it (issue
// 36: Ensure patched a mirror's linked Secret onto a Secret somebody else
// had created, and replaced its data).

// ReasonForeignObject is the condition reason of a [*ForeignError]: a
// reconcile.Loop, or status.MarkFailure, shows it on the object's Stalled
// condition, with the error's message naming the object.
const ReasonForeignObject = "ForeignObject"

// Adopt lets the call write to an existing object that is not yet this
// operator's: one that no owner controls or links and that the Writer's
// field owner (or a manager of [Replaces]) never wrote. Without it such an
// object is refused with a [*ForeignError]. The write makes the object the
// operator's: desired's owner reference ([Owner]) or link
// (ownership.SetLink) is written into it, and with no owner the Writer's
// field manager gets its entry in metadata.managedFields, so that later calls
// find it theirs without Adopt.
//
// Adopt never takes an object another owner controls or links away from it
// when desired names an owner of its own: that stays a *ForeignError, since
// an object has one controller. Let the other owner give it up first (remove
// its owner reference or link), or delete the object.
//
// Use it where taking over what is there is the point: a resource a user
// created by hand for the operator to manage from now on, or one the
// operator's own earlier version wrote under a field manager Replaces does
// not list.
func Adopt() Option {
	return func(c *config) { c.adopt = true }
}

// ForeignError is the error of a Writer's Ensure, EnsureMutate or
// EnsureApplied that found an existing object, with fields to write, that is
// not the caller's. The Writer wrote nothing. An existing object is the
// caller's when:
//
//   - desired names an owner (an [Owner] option, a controller reference, or
//     a link of ownership.SetLink): the object is controlled or linked by
//     that owner (compared by group, kind, namespace and name, as package
//     ownership compares them), or by no owner at all and written before by
//     the Writer's field owner or a manager of [Replaces];
//   - desired names no owner: the Writer's field owner or a manager of
//     Replaces wrote it before, whoever owns it.
//
// Anything else is someone else's: another owner controls or links it
// (Controller or Link says which), or it was created by someone else and no
// owner claims it. [Adopt] lets the call take the latter. An object read
// without managedFields cannot show who wrote it; it counts as written
// before, so for it only owner references and links decide.
//
// It is returned marked errors.Permanent, with reason [ReasonForeignObject]:
// retrying cannot change whose the object is. A reconcile.Loop reports it as
// Stalled with the object named. The object's owner letting it go, or its
// deletion, is a change to that object, not to the reconciled one: watch it
// (package track records such an object with Reads.Track) to be woken then.
// errors.As also finds an *ownership.AlreadyOwnedError in it when another
// owner controls or links the object.
type ForeignError struct {
	// GroupKind is the kind of the existing object.
	GroupKind schema.GroupKind
	// Object is its namespace and name.
	Object client.ObjectKey
	// Controller is the owner reference that controls it, when another
	// owner does.
	Controller *metav1.OwnerReference
	// Link is the owner it is linked to, when another owner is.
	Link *ownership.Link
	// FieldOwner is the Writer's field owner, which never wrote the object
	// when neither Controller nor Link is set.
	FieldOwner string
}

// Error names the object and whose it is.
func (e *ForeignError) Error() string {
	obj := fmt.Sprintf("%s %q", e.GroupKind.Kind, e.Object)
	switch {
	case e.Controller != nil:
		return fmt.Sprintf("drift: %s is controlled by %s %q, not by the owner desired names: left as it is", obj, e.Controller.Kind, e.Controller.Name)
	case e.Link != nil:
		return fmt.Sprintf("drift: %s is linked to %s %q, not to the owner desired names: left as it is", obj, e.Link.Kind, client.ObjectKey{Namespace: e.Link.Namespace, Name: e.Link.Name})
	}
	return fmt.Sprintf("drift: %s exists and is not ours: no owner controls it and field manager %q never wrote it; left as it is (drift.Adopt takes such an object over)", obj, e.FieldOwner)
}

// Unwrap returns an *ownership.AlreadyOwnedError naming the owner that
// controls or links the object, nil when none does.
func (e *ForeignError) Unwrap() error {
	obj := &metav1.ObjectMeta{Namespace: e.Object.Namespace, Name: e.Object.Name}
	switch {
	case e.Controller != nil:
		return &ownership.AlreadyOwnedError{Object: obj, Owner: *e.Controller}
	case e.Link != nil:
		return &ownership.AlreadyOwnedError{Object: obj, Owner: metav1.OwnerReference{
			APIVersion: e.Link.APIVersion, Kind: e.Link.Kind, Name: e.Link.Name, UID: e.Link.UID}}
	}
	return nil
}

// refuseForeign returns the error of a write of want over live when live is
// not the caller's (see ForeignError), nil when it is. want carries the
// owner desired names: its controller reference (an Owner option's
// included) or its link.
func (w *Writer) refuseForeign(cfg *config, want, live client.Object) error {
	claimRef := metav1.GetControllerOfNoCopy(want)
	claimLink, claimsLink := ownership.LinkOf(want)
	liveRef := metav1.GetControllerOfNoCopy(live)
	liveLink, linked := ownership.LinkOf(live)
	fe := &ForeignError{Object: client.ObjectKeyFromObject(live), FieldOwner: w.fieldOwner}
	switch {
	case (claimRef != nil || claimsLink) && liveRef != nil && (claimRef == nil || !sameController(*claimRef, *liveRef)):
		fe.Controller = liveRef.DeepCopy()
	case (claimRef != nil || claimsLink) && linked && (!claimsLink || !sameLink(claimLink, liveLink)):
		fe.Link = &liveLink
	case (claimRef != nil || claimsLink) && (liveRef != nil || linked):
		return nil // the owner desired names holds it
	case cfg.adopt || w.wroteBefore(cfg, live):
		return nil
	}
	if gvk, err := apiutil.GVKForObject(live, w.client.Scheme()); err == nil {
		fe.GroupKind = gvk.GroupKind()
	}
	return errors.Permanent(errors.WithReason(fe, ReasonForeignObject))
}

// wroteBefore reports whether the Writer's field owner, or a manager it
// replaces, has an entry of the main resource in live's managedFields, of
// any version or operation. An object read without managedFields (a cache
// that strips them, a fake client that does not record them) cannot tell
// who wrote it: it counts as written before, as every object did before
// the check existed.
func (w *Writer) wroteBefore(cfg *config, live client.Object) bool {
	q := managedfields.Query{Owner: w.fieldOwner, Replaces: managedfields.NewManagers(cfg.replaces...), AnyOperation: true}
	return q.WroteBefore(live.GetManagedFields())
}

// sameController reports whether two owner references name the same owner,
// by group, kind and name, as controllerutil compares them.
func sameController(a, b metav1.OwnerReference) bool {
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	return errA == nil && errB == nil && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// sameLink reports whether two links name the same owner, by group, kind,
// namespace and name, as ownership.SetLink compares them.
func sameLink(a, b ownership.Link) bool {
	return a.GroupKind() == b.GroupKind() && a.Namespace == b.Namespace && a.Name == b.Name
}

// foreignOr returns, for the *ownership.AlreadyOwnedError of setting the
// Owner on an object read from live (EnsureMutate), the [*ForeignError] of
// live; any other error unchanged.
func (w *Writer) foreignOr(live client.Object, err error) error {
	if _, owned := errors.AsType[*ownership.AlreadyOwnedError](err); !owned {
		return err
	}
	fe := &ForeignError{Object: client.ObjectKeyFromObject(live), FieldOwner: w.fieldOwner,
		Controller: metav1.GetControllerOf(live)}
	if fe.Controller == nil {
		if l, ok := ownership.LinkOf(live); ok {
			fe.Link = &l
		}
	}
	if gvk, gerr := apiutil.GVKForObject(live, w.client.Scheme()); gerr == nil {
		fe.GroupKind = gvk.GroupKind()
	}
	return errors.Permanent(errors.WithReason(fe, ReasonForeignObject))
}
