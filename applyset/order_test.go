package applyset

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reconcilekit/reconcilekit/errors"
)

func ref(kind, ns, name string) Ref {
	gk := schema.ParseGroupKind(kind)
	return Ref{GroupKind: gk, Namespace: ns, Name: name}
}

// TestOrder proves the order of writes: Namespaces and CRDs before what
// they hold or define, dependencies before dependents, then Helm's order of
// kinds; and the refusals of children that cannot make a set, each with
// the permanent ErrInvalidChildren.
func TestOrder(t *testing.T) {
	ns := ref("Namespace", "", "shop")
	crd := ref("CustomResourceDefinition.apiextensions.k8s.io", "", "databases.example.com")
	db := ref("Database.example.com", "shop", "db")
	secret := ref("Secret", "shop", "creds")
	dep := ref("Deployment.apps", "shop", "web")
	svc := ref("Service", "shop", "web")
	role := ref("ClusterRole.rbac.authorization.k8s.io", "", "reader")
	for _, tc := range []struct {
		name    string
		nodes   []node
		want    []Ref
		wantErr string
	}{{
		name: "kinds in install order, then by name",
		nodes: []node{
			{ref: dep, scope: scopeNamespaced}, {ref: svc, scope: scopeNamespaced},
			{ref: ref("Secret", "shop", "b"), scope: scopeNamespaced}, {ref: ref("Secret", "shop", "a"), scope: scopeNamespaced},
			{ref: role, scope: scopeCluster},
		},
		want: []Ref{ref("Secret", "shop", "a"), ref("Secret", "shop", "b"), role, svc, dep},
	}, {
		name: "the namespace and the CRD first, a dependency before its dependent",
		nodes: []node{
			{ref: dep, scope: scopeNamespaced, deps: []Ref{db}},
			{ref: db, scope: scopeUnknown},
			{ref: crd, scope: scopeCluster, crdOf: schema.GroupKind{Group: "example.com", Kind: "Database"}},
			{ref: ns, scope: scopeCluster},
			{ref: secret, scope: scopeNamespaced},
		},
		want: []Ref{ns, crd, secret, db, dep},
	}, {
		name: "a dependency may come later in install order",
		nodes: []node{
			{ref: secret, scope: scopeNamespaced, deps: []Ref{dep}},
			{ref: dep, scope: scopeNamespaced},
		},
		want: []Ref{dep, secret},
	}, {
		name:    "two children of one kind, namespace and name",
		nodes:   []node{{ref: secret, scope: scopeNamespaced}, {ref: secret, scope: scopeNamespaced}},
		wantErr: `children 0 and 1 are both Secret shop/creds`,
	}, {
		name:    "a dependency cycle",
		nodes:   []node{{ref: secret, scope: scopeNamespaced, deps: []Ref{dep}}, {ref: dep, scope: scopeNamespaced, deps: []Ref{secret}}, {ref: svc, scope: scopeNamespaced}},
		wantErr: `a dependency cycle among Deployment.apps shop/web, Secret shop/creds`,
	}, {
		name:    "a cycle through the namespace",
		nodes:   []node{{ref: ns, scope: scopeCluster, deps: []Ref{secret}}, {ref: secret, scope: scopeNamespaced}},
		wantErr: `a dependency cycle among Namespace shop, Secret shop/creds`,
	}, {
		name:    "a dependency on a child not in the set",
		nodes:   []node{{ref: dep, scope: scopeNamespaced, deps: []Ref{secret}}},
		wantErr: `Deployment.apps shop/web depends on Secret shop/creds, which is not in the set`,
	}, {
		name:    "itself",
		nodes:   []node{{ref: dep, scope: scopeNamespaced, deps: []Ref{dep}}},
		wantErr: `Deployment.apps shop/web depends on itself`,
	}, {
		name:    "a cluster-scoped child with a namespace",
		nodes:   []node{{ref: ref("ClusterRole.rbac.authorization.k8s.io", "shop", "reader"), scope: scopeCluster}},
		wantErr: `ClusterRole.rbac.authorization.k8s.io shop/reader is cluster-scoped and has namespace "shop"`,
	}, {
		name:    "a namespaced child without one",
		nodes:   []node{{ref: ref("Secret", "", "creds"), scope: scopeNamespaced}},
		wantErr: `Secret creds is namespaced and has no namespace`,
	}, {
		name:    "no name",
		nodes:   []node{{ref: ref("Secret", "shop", ""), scope: scopeNamespaced}},
		wantErr: `has no name`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := order(tc.nodes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("order() error = %v, want one containing %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidChildren) {
					t.Errorf("the error does not wrap ErrInvalidChildren: %v", err)
				}
				if c, _ := errors.Classify(err); c != errors.ClassPermanent {
					t.Errorf("the error is %v, want permanent", c)
				}
				if r := errors.Reason(err); r != ReasonInvalidChildren {
					t.Errorf("the error's reason is %q, want %q", r, ReasonInvalidChildren)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			refs := make([]Ref, len(got))
			for i, j := range got {
				refs[i] = tc.nodes[j].ref
			}
			if diff := cmp.Diff(tc.want, refs); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzOrder drives order with arbitrary sets: it never panics, refuses
// exactly the sets that cannot be written (a duplicate, a missing or
// self dependency, a cycle, a wrong namespace), and otherwise returns
// every child once, each after everything it depends on.
func FuzzOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{3, 3, 3, 0x81, 0x92})
	f.Add([]byte{1, 0x10, 2, 0x21, 3, 0x32, 4, 0x43, 5, 0x54})
	kinds := []string{"Namespace", "Secret", "Deployment.apps", "Database.example.com", "CustomResourceDefinition.apiextensions.k8s.io", "ClusterRole.rbac.authorization.k8s.io"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64 {
			data = data[:64]
		}
		var nodes []node
		for i := 0; i+1 < len(data); i += 2 {
			b, c := data[i], data[i+1]
			k := kinds[int(b)%len(kinds)]
			n := node{ref: ref(k, []string{"", "a", "b"}[int(b/8)%3], []string{"x", "y", "z", ""}[int(b/32)%4])}
			n.scope = scope(int(c) % 3)
			if k == "CustomResourceDefinition.apiextensions.k8s.io" && c&0x40 != 0 {
				n.crdOf = schema.GroupKind{Group: "example.com", Kind: "Database"}
			}
			if c&0x80 != 0 && len(nodes) > 0 {
				n.deps = append(n.deps, nodes[int(c/4)%len(nodes)].ref)
			}
			if c&0x08 != 0 && len(nodes) > 0 {
				n.deps = append(n.deps, ref(kinds[int(c/16)%len(kinds)], "a", "x"))
			}
			nodes = append(nodes, n)
			// A back edge now and then makes cycles.
			if c&0x20 != 0 && len(nodes) > 1 {
				nodes[0].deps = append(nodes[0].deps, n.ref)
			}
		}
		got, err := order(nodes)
		if err != nil {
			if !errors.Is(err, ErrInvalidChildren) {
				t.Fatalf("order refused with %v, not ErrInvalidChildren", err)
			}
			if c, _ := errors.Classify(err); c != errors.ClassPermanent {
				t.Fatalf("order's error is %v, want permanent", c)
			}
			return
		}
		if len(got) != len(nodes) {
			t.Fatalf("order returned %d of %d children", len(got), len(nodes))
		}
		at := map[Ref]int{}
		for pos, i := range got {
			n := nodes[i]
			if _, dup := at[n.ref]; dup {
				t.Fatalf("%s twice in %v", n.ref, got)
			}
			if n.ref.Name == "" || (n.scope == scopeCluster && n.ref.Namespace != "") || (n.scope == scopeNamespaced && n.ref.Namespace == "") {
				t.Fatalf("order accepted %s (scope %d)", n.ref, n.scope)
			}
			at[n.ref] = pos
		}
		for pos, i := range got {
			for _, d := range slices.Concat(nodes[i].deps, nodes[i].implied) {
				dp, ok := at[d]
				if !ok {
					t.Fatalf("%s depends on %s, not in the set, and was accepted", nodes[i].ref, d)
				}
				if dp >= pos {
					t.Fatalf("%s at %d before its dependency %s at %d", nodes[i].ref, pos, d, dp)
				}
			}
		}
	})
}
