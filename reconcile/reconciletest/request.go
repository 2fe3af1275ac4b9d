package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Verb is what a request asked the API server to do, in the words of the
// Kubernetes API ("get", "update", "deletecollection", ...). A request to a
// subresource has the subresource after a slash: "update/status",
// "create/eviction".
type Verb string

// The verbs of controller-runtime's client.Client.
const (
	Get         Verb = "get"
	List        Verb = "list"
	Watch       Verb = "watch"
	Create      Verb = "create"
	Update      Verb = "update"
	Patch       Verb = "patch"
	Apply       Verb = "apply"
	Delete      Verb = "delete"
	DeleteAllOf Verb = "deletecollection"

	// StatusUpdate is client.Status().Update.
	StatusUpdate Verb = "update/status"
	// StatusPatch is client.Status().Patch.
	StatusPatch Verb = "patch/status"
	// StatusApply is client.Status().Apply.
	StatusApply Verb = "apply/status"
)

// subresourceVerb names a request to a subresource: "update/status".
func subresourceVerb(v Verb, subresource string) Verb {
	return Verb(string(v) + "/" + subresource)
}

// IsWrite reports whether the verb changes state on the server: create,
// update, patch, apply, delete and deletecollection, on an object or on one
// of its subresources. Reads (get, list, watch) are not writes.
func (v Verb) IsWrite() bool {
	base, _, _ := strings.Cut(string(v), "/")
	switch Verb(base) {
	case Create, Update, Patch, Apply, Delete, DeleteAllOf:
		return true
	}
	return false
}

// APIRequest describes one call made through a wrapped client.
type APIRequest struct {
	// Verb is what was asked.
	Verb Verb
	// Kind is the object's kind ("ConfigMap", "Widget"); for a list or a
	// watch, the kind of its items. It is "" when the client's scheme does
	// not know the object's type.
	Kind string
	// Namespace and Name identify the object; Name is "" for list, watch
	// and deletecollection.
	Namespace, Name string
	// Err is the error the call returned, nil on success.
	Err error
}

// String describes the request in one line, for example
// `update/status Widget "ns/w"`, followed by the error if it failed.
func (r APIRequest) String() string {
	var b strings.Builder
	b.WriteString(string(r.Verb))
	b.WriteByte(' ')
	if r.Kind == "" {
		b.WriteString("<unknown kind>")
	} else {
		b.WriteString(r.Kind)
	}
	switch {
	case r.Name != "" && r.Namespace != "":
		fmt.Fprintf(&b, " %q", r.Namespace+"/"+r.Name)
	case r.Name != "":
		fmt.Fprintf(&b, " %q", r.Name)
	case r.Namespace != "":
		fmt.Fprintf(&b, " in namespace %q", r.Namespace)
	}
	if r.Err != nil {
		fmt.Fprintf(&b, " (failed: %v)", r.Err)
	}
	return b.String()
}

// objectRequest describes a request about one object.
func objectRequest(c client.Client, v Verb, obj client.Object) APIRequest {
	return APIRequest{Verb: v, Kind: kindOf(c, obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// keyRequest describes a Get, whose object may still be empty.
func keyRequest(c client.Client, obj client.Object, key client.ObjectKey) APIRequest {
	return APIRequest{Verb: Get, Kind: kindOf(c, obj), Namespace: key.Namespace, Name: key.Name}
}

// listRequest describes a List or Watch: the kind of the items, and the
// namespace the options restrict it to.
func listRequest(c client.Client, v Verb, list client.ObjectList, opts []client.ListOption) APIRequest {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	return APIRequest{Verb: v, Kind: strings.TrimSuffix(kindOf(c, list), "List"), Namespace: lo.Namespace}
}

// deleteAllOfRequest describes a DeleteAllOf.
func deleteAllOfRequest(c client.Client, obj client.Object, opts []client.DeleteAllOfOption) APIRequest {
	var o client.DeleteAllOfOptions
	o.ApplyOptions(opts)
	ns := o.Namespace
	if ns == "" {
		ns = obj.GetNamespace()
	}
	return APIRequest{Verb: DeleteAllOf, Kind: kindOf(c, obj), Namespace: ns}
}

// applyConfiguration is what client-go's generated apply configurations
// expose.
type applyConfiguration interface {
	GetName() *string
	GetNamespace() *string
	GetKind() *string
}

// unstructuredApplyConfiguration is what controller-runtime's
// client.ApplyConfigurationFromUnstructured exposes (an embedded
// *unstructured.Unstructured).
type unstructuredApplyConfiguration interface {
	GetName() string
	GetNamespace() string
	GetKind() string
}

// applyRequest describes an Apply.
func applyRequest(v Verb, obj runtime.ApplyConfiguration) APIRequest {
	r := APIRequest{Verb: v}
	switch ac := obj.(type) {
	case applyConfiguration:
		r.Kind, r.Namespace, r.Name = deref(ac.GetKind()), deref(ac.GetNamespace()), deref(ac.GetName())
	case unstructuredApplyConfiguration:
		r.Kind, r.Namespace, r.Name = ac.GetKind(), ac.GetNamespace(), ac.GetName()
	}
	return r
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// kindOf returns obj's kind as the client's scheme knows it, or "".
func kindOf(c client.Client, obj runtime.Object) string {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk.Kind
	}
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return ""
	}
	return gvk.Kind
}

// groupResource returns the API resource of a request's object, used in the
// messages of injected errors. It asks the client's REST mapper and falls
// back to guessing the plural from the kind.
func groupResource(c client.Client, obj runtime.Object) schema.GroupResource {
	if obj == nil {
		return schema.GroupResource{}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		var err error
		if gvk, err = c.GroupVersionKindFor(obj); err != nil {
			return schema.GroupResource{}
		}
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if m := c.RESTMapper(); m != nil {
		if mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return mapping.Resource.GroupResource()
		}
	}
	// The fake client's REST mapper is empty unless the test fills it.
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// ErrWatchUnsupported is returned by Watch on a wrapped client whose
// underlying client cannot watch (a client.Client that is not a
// client.WithWatch).
var ErrWatchUnsupported = errors.New("reconciletest: the wrapped client does not support Watch")

// withWatch lets controller-runtime's interceptor, which wraps a
// client.WithWatch, wrap any client.Client.
func withWatch(c client.Client) client.WithWatch {
	if w, ok := c.(client.WithWatch); ok {
		return w
	}
	return noWatch{c}
}

type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, ErrWatchUnsupported
}
