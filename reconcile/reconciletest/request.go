package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	VerbGet         Verb = "get"
	VerbList        Verb = "list"
	VerbWatch       Verb = "watch"
	VerbCreate      Verb = "create"
	VerbUpdate      Verb = "update"
	VerbPatch       Verb = "patch"
	VerbApply       Verb = "apply"
	VerbDelete      Verb = "delete"
	VerbDeleteAllOf Verb = "deletecollection"

	// VerbStatusUpdate is client.Status().Update.
	VerbStatusUpdate Verb = "update/status"
	// VerbStatusPatch is client.Status().Patch.
	VerbStatusPatch Verb = "patch/status"
	// VerbStatusApply is client.Status().Apply.
	VerbStatusApply Verb = "apply/status"
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
	case VerbCreate, VerbUpdate, VerbPatch, VerbApply, VerbDelete, VerbDeleteAllOf:
		return true
	}
	return false
}

// APIRequest describes one request to the API server: a call made through
// a client that a [Counter] wraps (see [Counter.Wrap]), or an HTTP request
// seen at the transport (see [Counter.WrapConfig]). Both fill Verb,
// Namespace, Name and Err; each fills what it can know besides: a client
// knows the object's Kind, the transport knows the HTTP exchange (Method,
// Resource, Path, Code, UserAgent).
type APIRequest struct {
	// Verb is what was asked.
	Verb Verb
	// Kind is the object's kind ("ConfigMap", "Widget"); for a list or a
	// watch, the kind of its items. It is "" when the client's scheme does
	// not know the object's type, and for requests counted at the
	// transport, which name a resource instead.
	Kind string
	// Namespace and Name identify the object; Name is "" for list, watch
	// and deletecollection, and at the transport for create, whose URL
	// names no object (its body does). A Namespace object has Name only.
	Namespace, Name string
	// Err is the error the call returned, nil on success. At the
	// transport it is an error that got no response at all (connection
	// refused, canceled); a response the server refused has its Code.
	Err error

	// Method is the HTTP method ("GET", "PATCH"); transport only.
	Method string
	// Resource is the API resource the request addressed, with its group:
	// {Group: "apps", Resource: "deployments"}; {Resource: "configmaps"}
	// for the core group. Transport only; empty for a request that names
	// no resource (discovery, /version).
	Resource schema.GroupResource
	// Path is the URL path, without the query ("/api/v1/namespaces/ns/
	// configmaps/cm"); transport only.
	Path string
	// Code is the HTTP status code of the response (200, 409, ...);
	// transport only, 0 when there was no response.
	Code int
	// UserAgent is the User-Agent header, which tells apart the clients of
	// one process: a controller-runtime manager's requests carry the
	// binary's name, and its leader election appends "/leader-election".
	// Transport only.
	UserAgent string
}

// String describes the request in one line, for example
// `update/status Widget "ns/w"`, followed by the error if it failed. A
// request counted at the transport names its resource instead of its kind
// (`patch/status widgets.testing.reconcilekit.io "ns/w"`), or its path when
// it names no resource (`get /apis`), and a refused one says its status
// code: `(failed: 409 Conflict)`.
func (r APIRequest) String() string {
	var b strings.Builder
	b.WriteString(string(r.Verb))
	b.WriteByte(' ')
	b.WriteString(r.what())
	switch {
	case r.Name != "" && r.Namespace != "":
		fmt.Fprintf(&b, " %q", r.Namespace+"/"+r.Name)
	case r.Name != "":
		fmt.Fprintf(&b, " %q", r.Name)
	case r.Namespace != "":
		fmt.Fprintf(&b, " in namespace %q", r.Namespace)
	}
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, " (failed: %v)", r.Err)
	case r.Code >= 400:
		fmt.Fprintf(&b, " (failed: %d %s)", r.Code, http.StatusText(r.Code))
	}
	return b.String()
}

// what names what the request is about: its kind, else its resource, else
// its path.
func (r APIRequest) what() string {
	switch {
	case r.Kind != "":
		return r.Kind
	case r.Resource.Resource != "":
		return r.Resource.String()
	case r.Path != "":
		return r.Path
	}
	return "<unknown kind>"
}

// objectRequest describes a request about one object.
func objectRequest(c client.Client, v Verb, obj client.Object) APIRequest {
	return APIRequest{Verb: v, Kind: kindOf(c, obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// keyRequest describes a Get, whose object may still be empty.
func keyRequest(c client.Client, obj client.Object, key client.ObjectKey) APIRequest {
	return APIRequest{Verb: VerbGet, Kind: kindOf(c, obj), Namespace: key.Namespace, Name: key.Name}
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
	return APIRequest{Verb: VerbDeleteAllOf, Kind: kindOf(c, obj), Namespace: ns}
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
