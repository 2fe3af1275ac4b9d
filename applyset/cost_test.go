package applyset_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// hundred returns a set of 100 children of 5 kinds, 20 of each, in ns;
// the ConfigMap "config-<changed>" holds value.
func hundred(ns string, changed int, value string, without string) []applyset.Child {
	var objs []client.Object
	for i := range 20 {
		v := "1"
		if i == changed {
			v = value
		}
		objs = append(objs,
			configMap(ns, fmt.Sprintf("config-%d", i), v),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("secret-%d", i)}, Data: map[string][]byte{"k": []byte("v")}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("service-%d", i)},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("account-%d", i)}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("role-%d", i)},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}},
		)
	}
	var out []applyset.Child
	for _, o := range objs {
		if o.GetName() != without {
			out = append(out, applyset.Child{Object: o})
		}
	}
	return out
}

// TestConvergedSetCosts measures, at the transport of a real manager
// (whose client reads from its cache, through a freshness.Tracker), what a
// set of 100 children of 5 kinds costs the API server: a converged Apply
// sends no request at all (no write, no uncached read), nor does its plan;
// one child changed costs one write; one child removed, one delete.
func TestConvergedSetCosts(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	var tracker freshness.Tracker
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{NewClient: tracker.NewClient}})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	parent := newParent(t, env.Client(t), ns)
	set := applyset.New(mgr.GetClient(), testOwner)
	apply := func(kids []applyset.Child, opts ...applyset.Option) applyset.Result {
		t.Helper()
		res, err := set.Apply(t.Context(), parent, kids, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := apply(hundred(ns, -1, "", ""))
	if n := res.Writes(); n != 101 {
		t.Fatalf("the first Apply says %d writes, want 100 creates and the parent's record", n)
	}
	// The informers of the five kinds are started by the first Apply; the
	// next reads from them.
	apply(hundred(ns, -1, "", ""))

	for _, step := range []struct {
		name      string
		children  []applyset.Child
		plan      bool
		wantReqs  []string
		wantWrite int
	}{
		{name: "converged", children: hundred(ns, -1, "", "")},
		{name: "converged, planned", children: hundred(ns, -1, "", ""), plan: true},
		{name: "one child changed", children: hundred(ns, 7, "2", ""), wantReqs: []string{`patch configmaps "` + ns + `/config-7"`}},
		{name: "one child changed, converged", children: hundred(ns, 7, "2", "")},
		{name: "one child removed", children: hundred(ns, 7, "2", "secret-3"), wantReqs: []string{`delete secrets "` + ns + `/secret-3"`}},
		{name: "one child removed, converged", children: hundred(ns, 7, "2", "secret-3")},
	} {
		t.Run(step.name, func(t *testing.T) {
			mgr.Requests.Reset()
			var opts []applyset.Option
			if step.plan {
				opts = append(opts, applyset.Plan())
			}
			res := apply(step.children, opts...)
			var got []string
			for _, r := range mgr.Requests.Requests() {
				got = append(got, requestLine(r))
			}
			if fmt.Sprint(got) != fmt.Sprint(step.wantReqs) {
				t.Errorf("requests at the transport: %q, want %q", got, step.wantReqs)
			}
			t.Logf("%s: %d children, %d requests at the transport (%d writes, %d reads); Result.Writes() = %d",
				step.name, len(step.children), len(got), len(mgr.Requests.Writes()), len(got)-len(mgr.Requests.Writes()), res.Writes())
		})
	}
}

// requestLine is a request at the transport as `verb resource "ns/name"`.
func requestLine(r reconciletest.APIRequest) string {
	return fmt.Sprintf("%s %s %q", r.Verb, r.Resource.String(), r.Namespace+"/"+r.Name)
}

// BenchmarkApplyConverged measures an Apply of a converged set of 100
// children of 5 kinds through a manager's cached client: the time and
// allocations of deciding that nothing is to be written, and the requests
// it sends (requests/op, 0).
func BenchmarkApplyConverged(b *testing.B) {
	env.Require(b)
	ns := env.Namespace(b)
	var tracker freshness.Tracker
	mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{NewClient: tracker.NewClient}})
	if err != nil {
		b.Fatal(err)
	}
	mgr.Run(b)
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"}}
	if err := env.Client(b).Create(b.Context(), parent); err != nil {
		b.Fatal(err)
	}
	set := applyset.New(mgr.GetClient(), testOwner)
	for range 2 {
		if _, err := set.Apply(b.Context(), parent, hundred(ns, -1, "", "")); err != nil {
			b.Fatal(err)
		}
	}
	mgr.Requests.Reset()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := set.Apply(b.Context(), parent, hundred(ns, -1, "", "")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(mgr.Requests.Requests()))/float64(b.N), "requests/op")
}
