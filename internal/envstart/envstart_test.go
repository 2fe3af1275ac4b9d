package envstart

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// fakeAPI is just enough of an API server for envtest's wait for the
// namespace "default": discovery of the core group and the namespace,
// which exists only once ready is set.
func fakeAPI(t *testing.T, ready *atomic.Bool) *rest.Config {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[`+
			`{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"]}]}`)
	})
	mux.HandleFunc("/api/v1/namespaces/default", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !ready.Load() {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// existing is an Environment on the fake API server: envtest runs its
// whole Start on it but the control-plane processes.
func existing(cfg *rest.Config) *envtest.Environment {
	yes := true
	return &envtest.Environment{UseExistingCluster: &yes, Config: rest.CopyConfig(cfg)}
}

// TestStartRetriesWhenEnvtestGivesUpOnTheDefaultNamespace runs envtest
// itself into its 5 s give-up (the namespace "default" is missing on the
// first attempt) and sees Start try a fresh Environment, which succeeds.
func TestStartRetriesWhenEnvtestGivesUpOnTheDefaultNamespace(t *testing.T) {
	var ready atomic.Bool
	cfg := fakeAPI(t, &ready)
	var attempts []int
	te, got, err := Start(func(attempt int) *envtest.Environment {
		attempts = append(attempts, attempt)
		ready.Store(attempt == 2) // the namespace appears for the second plane
		return existing(cfg)
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if te == nil || got == nil || got.Host != cfg.Host {
		t.Fatalf("Start returned %v, %v; want the second Environment and its config for %s", te, got, cfg.Host)
	}
	if fmt.Sprint(attempts) != "[1 2]" {
		t.Fatalf("attempts %v, want [1 2]", attempts)
	}
}

// TestStartGivesUpAfterAttempts sees every attempt fail on the namespace
// and the error name each one, with envtest's own words.
func TestStartGivesUpAfterAttempts(t *testing.T) {
	var ready atomic.Bool
	cfg := fakeAPI(t, &ready)
	n := 0
	const attempts = 2 // envtest waits 5 s on each
	_, _, err := start(func(int) *envtest.Environment { n++; return existing(cfg) }, attempts)
	if err == nil {
		t.Fatal("Start succeeded without the namespace default")
	}
	if n != attempts {
		t.Fatalf("%d attempts, want %d", n, attempts)
	}
	for i := 1; i <= attempts; i++ {
		if !strings.Contains(err.Error(), fmt.Sprintf("attempt %d: %s", i, slowNamespaceError)) {
			t.Errorf("error does not report attempt %d in envtest's words: %v", i, err)
		}
	}
}

// TestStartDoesNotRetryOtherFailures: a failure that is not the namespace
// wait (here, CRDs that do not exist) is returned after one attempt.
func TestStartDoesNotRetryOtherFailures(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	cfg := fakeAPI(t, &ready)
	n := 0
	_, _, err := Start(func(int) *envtest.Environment {
		n++
		te := existing(cfg)
		te.CRDDirectoryPaths = []string{t.TempDir() + "/missing"}
		te.ErrorIfCRDPathMissing = true
		return te
	})
	if err == nil || slowNamespace(err) {
		t.Fatalf("Start error %v, want the CRD failure", err)
	}
	if n != 1 {
		t.Fatalf("%d attempts for a failure Start must not retry", n)
	}
}

func TestSlowNamespace(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("unable to start control plane itself: timeout"), false},
		{fmt.Errorf("default namespace didn't register within deadline: %w", errors.New("context deadline exceeded")), true},
		{fmt.Errorf("wrapped: %w", fmt.Errorf("default namespace didn't register within deadline: x")), true},
	} {
		if got := slowNamespace(tc.err); got != tc.want {
			t.Errorf("slowNamespace(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
