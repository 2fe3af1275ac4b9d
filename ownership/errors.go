package ownership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrNoUID is returned when the owner has no UID, which means it was not
// read from or created on the API server: the server rejects an owner
// reference or link without one. It is returned wrapped and marked
// errors.Permanent: retrying with the same owner object cannot succeed.
var ErrNoUID = errors.New("ownership: owner has no UID: read or create it on the API server first")

// ErrInvalidPrune is returned, wrapped and marked errors.Permanent, by a
// [Prune] or [PruneListed] call that cannot run: a nil keep func, or a
// propagation policy ([WithPropagation]) the API server does not know.
// Nothing is listed or deleted.
var ErrInvalidPrune = errors.New("ownership: invalid prune")

// noUID is the error of an owner without a UID, doing what: wrapping
// [ErrNoUID], permanent.
func noUID(doing string, owner client.Object) error {
	return errors.Permanent(fmt.Errorf("%s %q: %w", doing, client.ObjectKeyFromObject(owner), ErrNoUID))
}

// CrossNamespaceError reports an owner in one namespace and an object in
// another: owner references cannot cross namespaces (the garbage collector
// would treat the owner as missing and delete the object). Use [SetLink].
//
// Retrying cannot succeed: the functions of this package return it marked
// errors.Permanent, so errors.Classify says permanent and errors.Is(err,
// reconcile.TerminalError(nil)) is true (controller-runtime does not
// requeue it). Match it with errors.As. A value built by hand is
// permanent only wrapped with errors.Permanent, as the functions do.
type CrossNamespaceError struct {
	Owner, Object client.ObjectKey
}

// Error names both objects and suggests a link.
func (e *CrossNamespaceError) Error() string {
	return fmt.Sprintf("owner %q cannot own %q: owner references cannot cross namespaces (use a link)", e.Owner, e.Object)
}

// ClusterScopedError reports a namespaced owner of a cluster-scoped object:
// owner references cannot point from a cluster-scoped object into a
// namespace. Use [SetLink].
//
// Like [CrossNamespaceError], it is returned marked errors.Permanent.
type ClusterScopedError struct {
	Owner  client.ObjectKey
	Object string
}

// Error names both objects and suggests a link.
func (e *ClusterScopedError) Error() string {
	return fmt.Sprintf("namespaced owner %q cannot own cluster-scoped %q (use a link)", e.Owner, e.Object)
}

// AlreadyOwnedError reports an object that is already controlled (or
// linked) by another owner: an object has at most one controller. Owner is
// the current controller.
//
// It is not marked permanent: errors.Classify leaves it transient, to retry
// with backoff. The conflict ends when the other owner lets go of the
// object, a change to the object that does not trigger the reconcile of
// the owner that failed to take it (its watch maps the object to its
// current controller), so a permanent failure would wait for someone to
// touch the owner; as with a Forbidden error, a capped backoff is what
// recovers. Mark it errors.Permanent yourself where another controller can
// never let go.
//
// errors.As also fills a *controllerutil.AlreadyOwnedError from it, so code
// written against controllerutil.SetControllerReference keeps working.
type AlreadyOwnedError struct {
	Object metav1.Object
	Owner  metav1.OwnerReference
}

// Error names the object and its current controller.
func (e *AlreadyOwnedError) Error() string {
	obj := client.ObjectKey{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
	return fmt.Sprintf("%q is already controlled by %s %q", obj, e.Owner.Kind, e.Owner.Name)
}

// As fills a *controllerutil.AlreadyOwnedError target.
func (e *AlreadyOwnedError) As(target any) bool {
	t, ok := target.(**controllerutil.AlreadyOwnedError)
	if ok {
		*t = &controllerutil.AlreadyOwnedError{Object: e.Object, Owner: e.Owner}
	}
	return ok
}
