package reconciletest_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// roundTripFunc is an http.RoundTripper that answers without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer is a RoundTripper that answers every request with code.
func answer(code int) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
	})
}

// TestWrapTransportDescribesKubernetesRequests: each kind of request a
// client sends is recorded with the verb kube-apiserver would authorize it
// as, its group/resource, namespace and name, and the exchange's method,
// path, status code and user agent.
func TestWrapTransportDescribesKubernetesRequests(t *testing.T) {
	const (
		mergePatch = "application/merge-patch+json"
		applyPatch = "application/apply-patch+yaml"
	)
	cm := schema.GroupResource{Resource: "configmaps"}
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	ns := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		name        string
		method, url string
		contentType string
		want        rt.APIRequest
	}{
		{"get", "GET", "/api/v1/namespaces/ns/configmaps/cm", "",
			rt.APIRequest{Verb: rt.VerbGet, Resource: cm, Namespace: "ns", Name: "cm"}},
		{"list in a namespace", "GET", "/api/v1/namespaces/ns/configmaps?limit=500", "",
			rt.APIRequest{Verb: rt.VerbList, Resource: cm, Namespace: "ns"}},
		{"list everywhere", "GET", "/api/v1/configmaps", "",
			rt.APIRequest{Verb: rt.VerbList, Resource: cm}},
		{"watch", "GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=7&allowWatchBookmarks=true", "",
			rt.APIRequest{Verb: rt.VerbWatch, Resource: cm, Namespace: "ns"}},
		{"watch=1", "GET", "/apis/apps/v1/deployments?watch=1", "",
			rt.APIRequest{Verb: rt.VerbWatch, Resource: deploy}},
		{"watch=false is a list", "GET", "/apis/apps/v1/deployments?watch=false", "",
			rt.APIRequest{Verb: rt.VerbList, Resource: deploy}},
		{"legacy watch path", "GET", "/api/v1/watch/namespaces/ns/configmaps", "",
			rt.APIRequest{Verb: rt.VerbWatch, Resource: cm, Namespace: "ns"}},
		{"create", "POST", "/apis/apps/v1/namespaces/ns/deployments", "application/json",
			rt.APIRequest{Verb: rt.VerbCreate, Resource: deploy, Namespace: "ns"}},
		{"update", "PUT", "/apis/apps/v1/namespaces/ns/deployments/d", "application/json",
			rt.APIRequest{Verb: rt.VerbUpdate, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"status update", "PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status", "application/json",
			rt.APIRequest{Verb: rt.VerbStatusUpdate, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"patch", "PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", mergePatch,
			rt.APIRequest{Verb: rt.VerbPatch, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"status patch", "PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", mergePatch,
			rt.APIRequest{Verb: rt.VerbStatusPatch, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"server-side apply", "PATCH", "/apis/apps/v1/namespaces/ns/deployments/d?fieldManager=m", applyPatch,
			rt.APIRequest{Verb: rt.VerbApply, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"status apply", "PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", applyPatch,
			rt.APIRequest{Verb: rt.VerbStatusApply, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"delete", "DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", "",
			rt.APIRequest{Verb: rt.VerbDelete, Resource: deploy, Namespace: "ns", Name: "d"}},
		{"deletecollection", "DELETE", "/apis/apps/v1/namespaces/ns/deployments?labelSelector=a%3Db", "",
			rt.APIRequest{Verb: rt.VerbDeleteAllOf, Resource: deploy, Namespace: "ns"}},
		{"eviction", "POST", "/api/v1/namespaces/ns/pods/p/eviction", "application/json",
			rt.APIRequest{Verb: "create/eviction", Resource: schema.GroupResource{Resource: "pods"}, Namespace: "ns", Name: "p"}},
		{"log", "GET", "/api/v1/namespaces/ns/pods/p/log", "",
			rt.APIRequest{Verb: "get/log", Resource: schema.GroupResource{Resource: "pods"}, Namespace: "ns", Name: "p"}},
		{"event", "POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "application/vnd.kubernetes.protobuf",
			rt.APIRequest{Verb: rt.VerbCreate, Resource: schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, Namespace: "ns"}},
		{"lease renewal", "PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "application/json",
			rt.APIRequest{Verb: rt.VerbUpdate, Resource: schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, Namespace: "ns", Name: "l"}},
		{"cluster-scoped object", "GET", "/api/v1/nodes/n1", "",
			rt.APIRequest{Verb: rt.VerbGet, Resource: schema.GroupResource{Resource: "nodes"}, Name: "n1"}},
		{"a Namespace object has a name, no namespace", "GET", "/api/v1/namespaces/ns", "",
			rt.APIRequest{Verb: rt.VerbGet, Resource: ns, Name: "ns"}},
		{"namespace status", "PUT", "/api/v1/namespaces/ns/status", "application/json",
			rt.APIRequest{Verb: rt.VerbStatusUpdate, Resource: ns, Name: "ns"}},
		{"namespace finalize", "PUT", "/api/v1/namespaces/ns/finalize", "application/json",
			rt.APIRequest{Verb: "update/finalize", Resource: ns, Name: "ns"}},
		{"list namespaces", "GET", "/api/v1/namespaces", "",
			rt.APIRequest{Verb: rt.VerbList, Resource: ns}},
		{"a resource named like a subresource", "GET", "/api/v1/namespaces/ns/status/x", "",
			rt.APIRequest{Verb: "get/status", Resource: ns, Name: "ns"}},
		{"discovery of groups", "GET", "/apis", "",
			rt.APIRequest{Verb: rt.VerbGet}},
		{"discovery of a group version", "GET", "/apis/apps/v1", "",
			rt.APIRequest{Verb: rt.VerbGet}},
		{"discovery of the core group", "GET", "/api/v1", "",
			rt.APIRequest{Verb: rt.VerbGet}},
		{"version", "GET", "/version", "",
			rt.APIRequest{Verb: rt.VerbGet}},
		{"trailing slash", "GET", "/api/v1/namespaces/ns/configmaps/", "",
			rt.APIRequest{Verb: rt.VerbList, Resource: cm, Namespace: "ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter rt.Counter
			req, err := http.NewRequestWithContext(t.Context(), tt.method, "https://api.example.com"+tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			req.Header.Set("User-Agent", "manager/v0.0.0")

			resp, err := counter.WrapTransport(answer(http.StatusOK)).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()

			want := tt.want
			want.Method, want.Path, want.Code, want.UserAgent = tt.method, strings.Split(tt.url, "?")[0], 200, "manager/v0.0.0"
			if diff := cmp.Diff([]rt.APIRequest{want}, counter.Requests()); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWrapTransportRecordsFailures: a refused request has its status code
// and reads as failed; a request that got no response has the error.
func TestWrapTransportRecordsFailures(t *testing.T) {
	var counter rt.Counter
	down := errors.New("connection refused")
	transports := []http.RoundTripper{
		counter.WrapTransport(answer(http.StatusConflict)),
		counter.WrapTransport(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, down })),
	}
	for _, tr := range transports {
		req, err := http.NewRequestWithContext(t.Context(), "PUT", "https://h/api/v1/namespaces/ns/configmaps/cm", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	got := counter.Requests()
	if len(got) != 2 {
		t.Fatalf("recorded %d requests, want 2: %v", len(got), got)
	}
	if got[0].Code != http.StatusConflict || got[0].Err != nil {
		t.Errorf("refused request: code %d, err %v; want 409 and no error", got[0].Code, got[0].Err)
	}
	if got[1].Code != 0 || !errors.Is(got[1].Err, down) {
		t.Errorf("unanswered request: code %d, err %v; want 0 and the transport's error", got[1].Code, got[1].Err)
	}
	want := []string{
		`update configmaps "ns/cm" (failed: 409 Conflict)`,
		`update configmaps "ns/cm" (failed: connection refused)`,
	}
	if diff := cmp.Diff(want, []string{got[0].String(), got[1].String()}); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	if n := len(counter.Writes()); n != 2 {
		t.Errorf("Writes = %d, want 2: a refused write was still sent", n)
	}
}

// TestWrapConfigCountsEveryClientOfTheConfig: a real HTTP client built from
// the wrapped config is counted, the server's path prefix is cut from the
// paths, and the caller's config is left alone.
func TestWrapConfigCountsEveryClientOfTheConfig(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL + "/clusters/c1", UserAgent: "my-operator"}
	var counter rt.Counter
	wrapped := counter.WrapConfig(cfg)
	if cfg.WrapTransport != nil {
		t.Fatal("WrapConfig changed the caller's config")
	}

	for _, c := range []*rest.Config{wrapped, rest.CopyConfig(wrapped)} {
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{http.MethodGet, http.MethodPatch} {
			req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+"/clusters/c1/apis/apps/v1/namespaces/ns/deployments/d", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	want := []rt.APIRequest{
		{Verb: rt.VerbGet, Code: 200}, {Verb: rt.VerbPatch, Code: 409},
		{Verb: rt.VerbGet, Code: 200}, {Verb: rt.VerbPatch, Code: 409},
	}
	for i := range want {
		want[i].Method = map[rt.Verb]string{rt.VerbGet: "GET", rt.VerbPatch: "PATCH"}[want[i].Verb]
		want[i].Resource = schema.GroupResource{Group: "apps", Resource: "deployments"}
		want[i].Namespace, want[i].Name = "ns", "d"
		want[i].Path = "/apis/apps/v1/namespaces/ns/deployments/d"
	}
	if diff := cmp.Diff(want, counter.Requests(), cmpopts.IgnoreFields(rt.APIRequest{}, "UserAgent")); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	for _, r := range counter.Requests() {
		if r.UserAgent != "my-operator" {
			t.Errorf("user agent = %q, want the config's %q", r.UserAgent, "my-operator")
		}
	}
	if got := counter.CountResource(rt.VerbPatch, "deployments.apps"); got != 2 {
		t.Errorf("CountResource(patch, deployments.apps) = %d, want 2", got)
	}
	if got := counter.CountResource(rt.VerbPatch, "deployments"); got != 0 {
		t.Errorf("CountResource(patch, deployments) = %d, want 0: the group is part of the name", got)
	}
	if got := counter.CountResource(rt.VerbGet, ""); got != 2 {
		t.Errorf("CountResource(get, \"\") = %d, want 2", got)
	}
	if got, want := counter.String(), "get deployments.apps: 2\npatch deployments.apps: 2\n"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
