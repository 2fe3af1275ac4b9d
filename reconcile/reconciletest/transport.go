package reconciletest

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// WrapConfig returns a copy of cfg whose requests are all recorded in the
// counter, whichever client sends them: every client, clientset, informer
// and event broadcaster made from the returned config shares its transport.
// Given to ctrl.NewManager, it counts everything the manager's process asks
// of the API server: the cache's lists and watches, the client's writes,
// the API reader's reads, the event recorder's writes, leader election's
// lease renewals, and discovery.
//
// A request is recorded when its response headers arrive (a watch when it
// is established), with its status code; a request that client-go retries
// (after a 429, say) is recorded each time it is sent. The records have no
// Kind (the transport sees a resource, not a Go type): query them by
// [APIRequest.Resource], with [Counter.CountResource], or by verb.
//
// Count a client either here or with [Counter.Wrap], not both, or its
// requests are recorded twice.
func (k *Counter) WrapConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	prefix := ""
	if u, err := url.Parse(cfg.Host); err == nil && u.Host != "" {
		prefix = strings.TrimRight(u.Path, "/")
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{counter: k, next: rt, prefix: prefix}
	})
	return cfg
}

// WrapTransport returns an http.RoundTripper that sends each request
// through rt and records it in the counter, for an HTTP client built by
// hand. The server's URL must not have a path prefix; [Counter.WrapConfig]
// handles one.
func (k *Counter) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{counter: k, next: rt}
}

// CountResource returns how many recorded requests had the verb and
// addressed the resource, written as [schema.GroupResource.String] writes
// it: "configmaps", "deployments.apps", "events.events.k8s.io". An empty
// resource matches every resource. Only requests counted at the transport
// know their resource.
func (k *Counter) CountResource(verb Verb, resource string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range k.requests {
		if r.Verb == verb && (resource == "" || (r.Resource.Resource != "" && r.Resource.String() == resource)) {
			n++
		}
	}
	return n
}

// countingTransport records every request it carries.
type countingTransport struct {
	counter *Counter
	next    http.RoundTripper
	// prefix is the path of the server's URL, cut from request paths.
	prefix string
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := requestFromHTTP(req, t.prefix)
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		r.Code = resp.StatusCode
	}
	r.Err = err
	t.counter.add(r)
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// close idle connections, for one).
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// requestFromHTTP describes an HTTP request to the Kubernetes API.
func requestFromHTTP(req *http.Request, prefix string) APIRequest {
	path := req.URL.Path
	if prefix != "" && (path == prefix || strings.HasPrefix(path, prefix+"/")) {
		path = path[len(prefix):]
	}
	apply := strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch")
	r := parseAPIPath(req.Method, path, watchQuery(req.URL.Query()), apply)
	r.UserAgent = req.Header.Get("User-Agent")
	return r
}

// watchQuery reports whether a query asks for a watch. Like apimachinery's
// conversion of query parameters to a bool, any value but "0" and "false"
// means true.
func watchQuery(q url.Values) bool {
	v, ok := q["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// namespaceSubresources are the subresources of a Namespace object, which
// the path /api/v1/namespaces/{name}/{subresource} addresses, as opposed to
// a resource in that namespace (kube-apiserver's RequestInfoFactory draws
// the same line).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseAPIPath describes a request from its method and URL path, the way
// kube-apiserver's RequestInfoFactory reads them:
//
//	/api/{version}/...                  the core group
//	/apis/{group}/{version}/...         a named group
//	.../watch/...                       a watch, whatever the method (legacy)
//	.../namespaces/{ns}/{resource}/...  a resource in a namespace
//	.../{resource}[/{name}[/{subresource}[/...]]]
//
// A GET without a name is a list, or a watch when watch says the query asked
// for one; a DELETE without a name is a deletecollection; a PATCH whose body
// is a server-side apply patch (apply) is an apply. A path that addresses no
// resource (discovery, /version, /healthz) has an empty Resource and the
// verb of its method.
func parseAPIPath(method, path string, watch, apply bool) APIRequest {
	r := APIRequest{Method: method, Path: path}
	parts := splitPath(path)
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		r.Verb = methodVerb(method, true, false, apply)
		return r
	}
	legacyWatch := false
	if parts[0] == "watch" {
		if len(parts) == 1 {
			r.Verb = methodVerb(method, true, false, apply)
			return r
		}
		legacyWatch, parts = true, parts[1:]
	}
	if parts[0] == "namespaces" && len(parts) > 2 && !namespaceSubresources[parts[2]] {
		r.Namespace, parts = parts[1], parts[2:]
	}
	// Otherwise a path under namespaces/ is a Namespace object (or its
	// status or finalize subresource): a name and no namespace.
	if parts[0] == "" { // an empty segment names no resource
		r.Namespace = ""
		r.Verb = methodVerb(method, true, false, apply)
		return r
	}
	r.Resource = schema.GroupResource{Group: group, Resource: parts[0]}
	if len(parts) > 1 {
		r.Name = parts[1]
	}
	if legacyWatch {
		r.Verb = VerbWatch
	} else {
		r.Verb = methodVerb(method, r.Name != "", watch, apply)
	}
	if len(parts) > 2 && r.Name != "" && parts[2] != "" {
		r.Verb = subresourceVerb(r.Verb, parts[2])
	}
	return r
}

// methodVerb maps an HTTP method to the verb it asks of a resource with or
// without a name.
func methodVerb(method string, named, watch, apply bool) Verb {
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case named:
			return VerbGet
		case watch:
			return VerbWatch
		}
		return VerbList
	case http.MethodPost:
		return VerbCreate
	case http.MethodPut:
		return VerbUpdate
	case http.MethodPatch:
		if apply {
			return VerbApply
		}
		return VerbPatch
	case http.MethodDelete:
		if named {
			return VerbDelete
		}
		return VerbDeleteAllOf
	}
	if strings.Contains(method, "/") { // not an HTTP method; keep verbs' slash for subresources
		return "unknown"
	}
	return Verb(strings.ToLower(method))
}

// splitPath splits a URL path into its segments, as kube-apiserver does:
// without the leading and trailing slash; nil for "/" or "".
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
