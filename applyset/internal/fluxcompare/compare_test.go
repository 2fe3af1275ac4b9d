package fluxcompare

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{})
}

// children returns 100 objects of 5 kinds, 20 of each, in ns; the
// ConfigMap config-<changed> holds value, and the object named without is
// left out.
func children(ns string, changed int, value, without string) []client.Object {
	var objs []client.Object
	for i := range 20 {
		v := "1"
		if i == changed {
			v = value
		}
		objs = append(objs,
			&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("config-%d", i)}, Data: map[string]string{"k": v}},
			&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("secret-%d", i)}, Data: map[string][]byte{"k": []byte("v")}},
			&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("service-%d", i)},
				Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
			&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("account-%d", i)}},
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("role-%d", i)},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}},
		)
	}
	return slices.DeleteFunc(objs, func(o client.Object) bool { return o.GetName() == without })
}

// step is one reconcile of the comparison: what the operator wants.
type step struct {
	name             string
	changed          int
	value, without   string
	previousWithout  string // Flux's inventory: what the last reconcile applied
	wantSet, wantMax int
}

var steps = []step{
	{name: "converged", changed: -1},
	{name: "one child changed", changed: 7, value: "2"},
	{name: "one child changed, converged", changed: 7, value: "2"},
	{name: "one child removed", changed: 7, value: "2", without: "secret-3"},
	{name: "one child removed, converged", changed: 7, value: "2", without: "secret-3", previousWithout: "secret-3"},
}

// counts sums requests at the transport as "verb resource".
func counts(m *testenv.Manager) (total int, byVerb string) {
	n := map[string]int{}
	for _, r := range m.Requests.Requests() {
		n[string(r.Verb)]++
		total++
	}
	var parts []string
	for v, c := range n {
		parts = append(parts, fmt.Sprintf("%d %s", c, v))
	}
	slices.Sort(parts)
	return total, strings.Join(parts, ", ")
}

// TestSetAgainstFluxResourceManager applies the same set of 100 children,
// then changes one, then removes one, with an applyset.Set and with Flux's
// ResourceManager.ApplyAllStaged (and DeleteAll for what left its
// inventory, as kustomize-controller prunes), each under a manager of its
// own whose every request is counted at the transport; it logs the
// requests of each step and checks the Set's.
func TestSetAgainstFluxResourceManager(t *testing.T) {
	env.Require(t)
	type result struct{ set, flux, fluxCached string }
	results := make([]result, len(steps))

	t.Run("applyset", func(t *testing.T) {
		ns := env.Namespace(t)
		var tracker freshness.Tracker
		mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: manager.Options{NewClient: tracker.NewClient}})
		if err != nil {
			t.Fatal(err)
		}
		mgr.Run(t)
		parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"}}
		if err := env.Client(t).Create(t.Context(), parent); err != nil {
			t.Fatal(err)
		}
		set := applyset.New(mgr.GetClient(), "applyset-compare")
		apply := func(objs []client.Object) {
			t.Helper()
			kids := make([]applyset.Child, len(objs))
			for i, o := range objs {
				kids[i] = applyset.Child{Object: o}
			}
			if _, err := set.Apply(t.Context(), parent, kids); err != nil {
				t.Fatal(err)
			}
		}
		apply(children(ns, -1, "", ""))
		apply(children(ns, -1, "", "")) // the informers are started
		for i, s := range steps {
			mgr.Requests.Reset()
			apply(children(ns, s.changed, s.value, s.without))
			n, verbs := counts(mgr)
			results[i].set = fmt.Sprintf("%d (%s)", n, verbs)
			want := 0
			if !strings.HasSuffix(s.name, "converged") {
				want = 1
			}
			if n != want {
				t.Errorf("%s: the Set sent %d requests (%s), want %d", s.name, n, verbs, want)
			}
		}
	})

	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("flux ssa, unstructured cached %v", cached), func(t *testing.T) {
			ns := env.Namespace(t)
			opts := manager.Options{}
			if cached {
				opts.Client.Cache = &client.CacheOptions{Unstructured: true}
			}
			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns, Options: opts})
			if err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)
			rm := ssa.NewResourceManager(mgr.GetClient(), nil, ssa.Owner{Field: "flux-compare", Group: "compare.fluxcd.io"})
			unstructuredOf := func(objs []client.Object) []*unstructured.Unstructured {
				out := make([]*unstructured.Unstructured, len(objs))
				for i, o := range objs {
					m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
					if err != nil {
						t.Fatal(err)
					}
					out[i] = &unstructured.Unstructured{Object: m}
				}
				rm.SetOwnerLabels(out, "compare", ns)
				return out
			}
			apply := func(objs []client.Object, stale []client.Object) {
				t.Helper()
				if _, err := rm.ApplyAllStaged(t.Context(), unstructuredOf(objs), ssa.DefaultApplyOptions()); err != nil {
					t.Fatal(err)
				}
				if len(stale) > 0 {
					if _, err := rm.DeleteAll(t.Context(), unstructuredOf(stale), ssa.DefaultDeleteOptions()); err != nil {
						t.Fatal(err)
					}
				}
			}
			apply(children(ns, -1, "", ""), nil)
			apply(children(ns, -1, "", ""), nil)
			for i, s := range steps {
				var stale []client.Object
				if s.without != "" && s.previousWithout == "" {
					for _, o := range children(ns, -1, "", "") {
						if o.GetName() == s.without {
							stale = append(stale, o)
						}
					}
				}
				mgr.Requests.Reset()
				apply(children(ns, s.changed, s.value, s.without), stale)
				n, verbs := counts(mgr)
				if cached {
					results[i].fluxCached = fmt.Sprintf("%d (%s)", n, verbs)
				} else {
					results[i].flux = fmt.Sprintf("%d (%s)", n, verbs)
				}
			}
		})
	}

	var b strings.Builder
	b.WriteString("\n| 100 children of 5 kinds | applyset.Set | Flux ssa.ResourceManager | the same, unstructured cached |\n|---|---|---|---|\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.name, results[i].set, results[i].flux, results[i].fluxCached)
	}
	t.Log(b.String())
}
