package reconciletest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseAPIPath parses fuzzed paths and checks: no panic; only a path
// under /api/{version} or /apis/{group}/{version} names a resource; the
// namespace and name are single path segments; a known method always gives
// a known verb (with the subresource after a slash); and the description
// survives a round trip: the path built back from it parses the same.
func FuzzParseAPIPath(f *testing.F) {
	for _, seed := range []struct {
		method, path string
		watch, apply bool
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cm", false, false},
		{"GET", "/api/v1/namespaces/ns/configmaps", true, false},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", false, false},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", false, true},
		{"DELETE", "/apis/apps/v1/deployments", false, false},
		{"PUT", "/api/v1/namespaces/ns/finalize", false, false},
		{"POST", "/api/v1/watch/watch", false, false},
		{"GET", "/apis", false, false},
		{"GET", "//api//v1//", false, false},
		{"OPTIONS", "/api/v1/namespaces/a/namespaces/b/status/x/y", true, true},
		{"", "", false, false},
	} {
		f.Add(seed.method, seed.path, seed.watch, seed.apply)
	}
	known := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}
	verbs := map[Verb]bool{VerbGet: true, VerbList: true, VerbWatch: true, VerbCreate: true, VerbUpdate: true, VerbPatch: true, VerbApply: true, VerbDelete: true, VerbDeleteAllOf: true}
	f.Fuzz(func(t *testing.T, method, path string, watch, apply bool) {
		r := parseAPIPath(method, path, watch, apply)

		if r.Method != method || r.Path != path {
			t.Errorf("method, path = %q, %q; want the input %q, %q", r.Method, r.Path, method, path)
		}
		parts := splitPath(path)
		if r.Resource.Resource != "" && !(len(parts) >= 3 && parts[0] == "api") && !(len(parts) >= 4 && parts[0] == "apis") {
			t.Errorf("%q names resource %v, but is not under /api/{version} or /apis/{group}/{version}", path, r.Resource)
		}
		if r.Resource.Resource == "" && (r.Namespace != "" || r.Name != "") {
			t.Errorf("%q has no resource but namespace %q, name %q", path, r.Namespace, r.Name)
		}
		for _, s := range []string{r.Namespace, r.Name, r.Resource.Resource, r.Resource.Group} {
			if strings.Contains(s, "/") {
				t.Errorf("%q: segment %q holds a slash", path, s)
			}
		}
		base, sub, hasSub := strings.Cut(string(r.Verb), "/")
		if known[method] && !verbs[Verb(base)] {
			t.Errorf("%s %q: verb %q is not a Kubernetes verb", method, path, r.Verb)
		}
		if hasSub && (sub == "" || r.Name == "" || strings.Contains(sub, "/")) {
			t.Errorf("%q: verb %q has a subresource without a name, or an empty one", path, r.Verb)
		}
		if r.Resource.Resource == "" || r.Resource.Group != "" && strings.Contains(r.Resource.Group, "/") {
			return
		}

		// Round trip: build the path back from the description.
		var b strings.Builder
		if r.Resource.Group == "" {
			b.WriteString("/api/v1")
		} else {
			b.WriteString("/apis/" + r.Resource.Group + "/v1")
		}
		if base == string(VerbWatch) {
			b.WriteString("/watch")
		}
		if r.Namespace != "" {
			b.WriteString("/namespaces/" + r.Namespace)
		}
		b.WriteString("/" + r.Resource.Resource)
		if r.Name != "" {
			b.WriteString("/" + r.Name)
		}
		if hasSub {
			b.WriteString("/" + sub)
		}
		again := parseAPIPath(method, b.String(), watch, apply)
		if diff := cmp.Diff(r, again, cmpopts.IgnoreFields(APIRequest{}, "Path")); diff != "" {
			t.Errorf("%q parsed, rebuilt as %q, parses differently (-first +again):\n%s", path, b.String(), diff)
		}
	})
}

// TestParseAPIPathMethods: every HTTP method gives its verb, with and
// without a name, so the fuzz test's notion of a known method is right.
func TestParseAPIPathMethods(t *testing.T) {
	tests := []struct {
		method       string
		named, whole Verb
	}{
		{http.MethodGet, VerbGet, VerbList},
		{http.MethodHead, VerbGet, VerbList},
		{http.MethodPost, VerbCreate, VerbCreate},
		{http.MethodPut, VerbUpdate, VerbUpdate},
		{http.MethodPatch, VerbPatch, VerbPatch},
		{http.MethodDelete, VerbDelete, VerbDeleteAllOf},
		{http.MethodOptions, "options", "options"},
	}
	for _, tt := range tests {
		if got := parseAPIPath(tt.method, "/api/v1/namespaces/ns/pods/p", false, false).Verb; got != tt.named {
			t.Errorf("%s of an object: verb %q, want %q", tt.method, got, tt.named)
		}
		if got := parseAPIPath(tt.method, "/api/v1/namespaces/ns/pods", false, false).Verb; got != tt.whole {
			t.Errorf("%s of a collection: verb %q, want %q", tt.method, got, tt.whole)
		}
	}
}
