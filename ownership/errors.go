package ownership

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ErrNoUID is returned when the owner has no UID, which means it was not
// read from or created on the API server: the server rejects an owner
// reference or link without one.
var ErrNoUID = errors.New("ownership: owner has no UID: read or create it on the API server first")

// terminal is what errors.Is compares against for controller-runtime's
// terminal errors.
var terminal = reconcile.TerminalError(nil)

// CrossNamespaceError reports an owner in one namespace and an object in
// another: owner references cannot cross namespaces (the garbage collector
// would treat the owner as missing and delete the object). Use [SetLink].
//
// It matches reconcile.TerminalError(nil) with errors.Is: retrying cannot
// succeed, so controller-runtime does not requeue it.
type CrossNamespaceError struct {
	Owner, Object client.ObjectKey
}

// Error names both objects and suggests a link.
func (e *CrossNamespaceError) Error() string {
	return fmt.Sprintf("owner %q cannot own %q: owner references cannot cross namespaces (use a link)", e.Owner, e.Object)
}

// Is reports whether target is a controller-runtime terminal error.
func (e *CrossNamespaceError) Is(target error) bool { return errors.Is(terminal, target) }

// ClusterScopedError reports a namespaced owner of a cluster-scoped object:
// owner references cannot point from a cluster-scoped object into a
// namespace. Use [SetLink].
//
// It matches reconcile.TerminalError(nil) with errors.Is, like
// [CrossNamespaceError].
type ClusterScopedError struct {
	Owner  client.ObjectKey
	Object string
}

// Error names both objects and suggests a link.
func (e *ClusterScopedError) Error() string {
	return fmt.Sprintf("namespaced owner %q cannot own cluster-scoped %q (use a link)", e.Owner, e.Object)
}

// Is reports whether target is a controller-runtime terminal error.
func (e *ClusterScopedError) Is(target error) bool { return errors.Is(terminal, target) }

// AlreadyOwnedError reports an object that is already controlled (or
// linked) by another owner: an object has at most one controller. Owner is
// the current controller.
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
