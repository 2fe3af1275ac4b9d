package ownership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/errors"
)

// SetController makes owner the controller of obj: it adds or updates a
// controller owner reference (controller and blockOwnerDeletion true), the
// same one controllerutil.SetControllerReference writes, so the two can be
// mixed. It changes obj only, writing nothing to the API server.
//
// Errors, matchable with errors.As: [*CrossNamespaceError],
// [*ClusterScopedError] (namespaced owner, cluster-scoped obj) and
// [*AlreadyOwnedError] (another owner is the controller); errors.Is
// [ErrNoUID] for an owner that has no UID. All but *AlreadyOwnedError are
// marked errors.Permanent (see the package documentation). As in
// controllerutil, an object with an empty namespace counts as
// cluster-scoped, and references are the same when their group, kind and
// name are.
func SetController(owner, obj client.Object, scheme *runtime.Scheme) error {
	if err := validate(owner, obj); err != nil {
		return err
	}
	err := controllerutil.SetControllerReference(owner, obj, scheme)
	var owned *controllerutil.AlreadyOwnedError
	if errors.As(err, &owned) {
		return &AlreadyOwnedError{Object: owned.Object, Owner: owned.Owner}
	}
	if err != nil {
		return fmt.Errorf("setting the controller of %q: %w", client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// SetOwner adds or updates a plain (non-controller) owner reference to owner
// on obj, like controllerutil.SetOwnerReference: the garbage collector then
// deletes obj only once all its owners are gone. It returns the same errors
// as [SetController], except [*AlreadyOwnedError]: an object may have many
// owners.
func SetOwner(owner, obj client.Object, scheme *runtime.Scheme) error {
	if err := validate(owner, obj); err != nil {
		return err
	}
	if err := controllerutil.SetOwnerReference(owner, obj, scheme); err != nil {
		return fmt.Errorf("setting an owner of %q: %w", client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// IsControlledBy reports whether obj's controller reference points to owner,
// compared by UID, so a deleted and recreated owner of the same name is not
// the controller of the old one's children.
func IsControlledBy(obj, owner client.Object) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && owner.GetUID() != "" && ref.UID == owner.GetUID()
}

func validate(owner, obj client.Object) error {
	if owner.GetUID() == "" {
		return noUID("owner", owner)
	}
	ownerNS := owner.GetNamespace()
	if ownerNS == "" {
		return nil // a cluster-scoped owner may own anything
	}
	switch obj.GetNamespace() {
	case "":
		return errors.Permanent(&ClusterScopedError{Owner: client.ObjectKeyFromObject(owner), Object: obj.GetName()})
	case ownerNS:
		return nil
	default:
		return errors.Permanent(&CrossNamespaceError{Owner: client.ObjectKeyFromObject(owner), Object: client.ObjectKeyFromObject(obj)})
	}
}
