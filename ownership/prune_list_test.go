package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// listCalls records the lists a client was asked for, as "in <namespace>"
// followed by the field selector, if any.
type listCalls struct {
	mu    sync.Mutex
	calls []string
}

// recordLists wraps c so that calls records every List asked of it.
func recordLists(c client.Client, calls *listCalls) client.Client {
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var lo client.ListOptions
			lo.ApplyOptions(opts)
			call := fmt.Sprintf("in %q", lo.Namespace)
			if lo.FieldSelector != nil {
				call += " where " + lo.FieldSelector.String()
			}
			calls.mu.Lock()
			calls.calls = append(calls.calls, call)
			calls.mu.Unlock()
			return c.List(ctx, list, opts...)
		},
	})
}

func (l *listCalls) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// withWatch lets the interceptor wrap a client that cannot watch.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch not supported")
}

// TestPruneRequests shows how Prune lists, by what it asks its client for
// and what reaches the API server (counted at the transport): through the
// owner index when one is registered (one list, of the owner's children
// only, served by the cache), through the cache without it (the cache
// refuses the indexed list, Prune lists the namespace), through an uncached
// client (the API server refuses the indexed list with 400, Prune lists
// again), and not at all with PruneListed. In every case it deletes the
// same child.
func TestPruneRequests(t *testing.T) {
	const indexed = `where .metadata.controllerUID=<owner>`
	for _, tc := range []struct {
		name string
		// cached: the client reads from an informer cache; index: with
		// the IndexOwner index registered.
		cached, index bool
		// listed: the caller lists the namespace itself and calls
		// PruneListed.
		listed bool
		// wantLists is what Prune asked its client for, in order.
		wantLists []string
		// wantRequests is what reached the API server, by verb.
		wantRequests map[string]int
	}{{
		name:   "cached client with the owner index",
		cached: true, index: true,
		wantLists:    []string{`in "<ns>" ` + indexed},
		wantRequests: map[string]int{"delete": 1},
	}, {
		name:         "cached client without the owner index",
		cached:       true,
		wantLists:    []string{`in "<ns>" ` + indexed, `in "<ns>"`},
		wantRequests: map[string]int{"delete": 1},
	}, {
		name:         "uncached client",
		wantLists:    []string{`in "<ns>" ` + indexed, `in "<ns>"`},
		wantRequests: map[string]int{"list": 2, "delete": 1},
	}, {
		name:         "PruneListed with the caller's list",
		listed:       true,
		wantLists:    nil,
		wantRequests: map[string]int{"delete": 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env.Require(t)
			ns := env.Namespace(t)
			owner, _ := family(t, env.Client(t), ns)
			reqs := &testenv.Requests{}
			cfg := reqs.WrapConfig(env.Config)
			var c client.Client
			if tc.cached {
				c = cachedClientFor(t, cfg, tc.index, ns)
				waitForCache(t, c, ns, 5)
			} else {
				var err error
				if c, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
					t.Fatal(err)
				}
			}
			list := &corev1.ConfigMapList{}
			if tc.listed {
				if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
			}
			calls := &listCalls{}
			recorded := recordLists(c, calls)
			reqs.Reset()

			var deleted []client.Object
			var err error
			if tc.listed {
				deleted, err = ownership.PruneListed(t.Context(), recorded, owner, list, keepPrefix("owned-1"))
			} else {
				deleted, err = ownership.Prune(t.Context(), recorded, owner, list, keepPrefix("owned-1"))
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"owned-2"}, objectNames(deleted)); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			var gotLists []string
			for _, call := range calls.get() {
				call = strings.ReplaceAll(call, ns, "<ns>")
				gotLists = append(gotLists, strings.ReplaceAll(call, string(owner.UID), "<owner>"))
			}
			if diff := cmp.Diff(tc.wantLists, gotLists); diff != "" {
				t.Errorf("lists Prune asked for (-want +got):\n%s", diff)
			}
			// Discovery requests (the client's REST mapper, on first use)
			// are not Prune's.
			got := map[string]int{}
			var refused []string
			for _, r := range reqs.Requests() {
				if r.Resource.Resource != "configmaps" {
					continue
				}
				got[string(r.Verb)]++
				if r.Code >= 400 {
					refused = append(refused, fmt.Sprintf("%s %d", r.Verb, r.Code))
				}
			}
			if diff := cmp.Diff(tc.wantRequests, got); diff != "" {
				t.Errorf("requests that reached the API server (-want +got):\n%s", diff)
			}
			var wantRefused []string
			if !tc.cached && !tc.listed {
				wantRefused = []string{"list 400"} // the indexed list
			}
			if diff := cmp.Diff(wantRefused, refused); diff != "" {
				t.Errorf("requests the API server refused (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPruneKeepsTheOwnerNamespace prunes, from a cache of two namespaces,
// with every kind of list option: options add to the owner's namespace
// (ControlledBy and label selectors among them), a client.InNamespace
// replaces it, InAllNamespaces lists everywhere, LinkedTo selects linked
// children. Nothing is kept, so each case deletes every child its list
// finds.
func TestPruneKeepsTheOwnerNamespace(t *testing.T) {
	keepNothing := func(client.Object) bool { return false }
	type setup struct {
		owner  *testapi.Widget
		other  string // the second namespace
		cached client.Client
	}
	for _, tc := range []struct {
		name  string
		prune func(ctx context.Context, s setup) ([]client.Object, error)
		want  []string
	}{{
		name: "no options: the owner's namespace",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing)
		},
		want: []string{"controlled-a"},
	}, {
		name: "ControlledBy keeps the owner's namespace",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing,
				ownership.WithListOptions(ownership.ControlledBy(s.owner)))
		},
		want: []string{"controlled-a"},
	}, {
		name: "a label selector keeps the owner's namespace",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing,
				ownership.WithListOptions(client.MatchingLabels{"tier": "web"}))
		},
		want: []string{"controlled-a"},
	}, {
		name: "LinkedTo selects the linked children of the owner's namespace",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing,
				ownership.WithListOptions(ownership.LinkedTo(s.owner)))
		},
		want: []string{"linked-a"},
	}, {
		name: "LinkedTo with InAllNamespaces",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing,
				ownership.WithListOptions(ownership.LinkedTo(s.owner)), ownership.InAllNamespaces())
		},
		want: []string{"linked-a", "linked-b"},
	}, {
		name: "InAllNamespaces",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing, ownership.InAllNamespaces())
		},
		want: []string{"controlled-a", "controlled-b"},
	}, {
		name: "InNamespace replaces the owner's namespace",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			return ownership.Prune(ctx, s.cached, s.owner, &corev1.ConfigMapList{}, keepNothing,
				ownership.WithListOptions(client.InNamespace(s.other)))
		},
		want: []string{"controlled-b"},
	}, {
		name: "PruneListed deletes the owner's children of any list",
		prune: func(ctx context.Context, s setup) ([]client.Object, error) {
			all := &corev1.ConfigMapList{}
			if err := s.cached.List(ctx, all); err != nil {
				return nil, err
			}
			return ownership.PruneListed(ctx, s.cached, s.owner, all, keepNothing)
		},
		want: []string{"controlled-a", "controlled-b", "linked-a", "linked-b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env.Require(t)
			direct := env.Client(t)
			ctx := t.Context()
			nsA, nsB := env.Namespace(t), env.Namespace(t)
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "owner"}}
			if err := direct.Create(ctx, owner); err != nil {
				t.Fatal(err)
			}
			// An owner reference cannot cross namespaces for the garbage
			// collector, but the API server stores one: a child the
			// namespace default must leave alone.
			crossNamespace := metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: "Widget",
				Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}
			for _, child := range []struct {
				ns, name string
				set      func(*corev1.ConfigMap) error
			}{
				{nsA, "controlled-a", func(cm *corev1.ConfigMap) error { return ownership.SetController(owner, cm, env.Scheme) }},
				{nsA, "linked-a", func(cm *corev1.ConfigMap) error { return ownership.SetLink(owner, cm, env.Scheme) }},
				{nsA, "unowned-a", func(*corev1.ConfigMap) error { return nil }},
				{nsB, "controlled-b", func(cm *corev1.ConfigMap) error {
					cm.OwnerReferences = []metav1.OwnerReference{crossNamespace}
					return nil
				}},
				{nsB, "linked-b", func(cm *corev1.ConfigMap) error { return ownership.SetLink(owner, cm, env.Scheme) }},
			} {
				cm := configMap(child.ns, child.name)
				cm.Labels = map[string]string{"tier": "web"}
				if err := child.set(cm); err != nil {
					t.Fatal(err)
				}
				if err := direct.Create(ctx, cm); err != nil {
					t.Fatal(err)
				}
			}
			cached := cachedClientFor(t, env.Config, true, nsA, nsB)
			waitForCache(t, cached, nsA, 3)
			waitForCache(t, cached, nsB, 2)

			deleted, err := tc.prune(ctx, setup{owner: owner, other: nsB, cached: cached})
			if err != nil {
				t.Fatal(err)
			}
			got := objectNames(deleted)
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
		})
	}
}
