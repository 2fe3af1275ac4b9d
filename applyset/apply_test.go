package applyset_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// TestApplyAcrossNamespacesAndClusterScoped proves a set reaches children
// an owner reference cannot: it writes a ConfigMap in the parent's
// namespace (controlled by the parent), one in another namespace and a
// ClusterRole (both linked to it), records them on the parent as KEP-3659
// says, writes nothing when converged, deletes exactly the children that
// left the set, wherever they live, and shrinks the record once they are
// gone.
func TestApplyAcrossNamespacesAndClusterScoped(t *testing.T) {
	c, reqs := env.CountingClient(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	parent := newParent(t, c, ns)
	roleName := "applyset-test-" + ns
	set := applyset.New(c, testOwner)
	id := applyset.ID(schema.GroupKind{Kind: "ConfigMap"}, ns, "parent")
	desired := func(all bool) []applyset.Child {
		objs := []client.Object{configMap(ns, "local", "1")}
		if all {
			objs = append(objs, configMap(other, "remote", "1"), clusterRole(roleName))
		}
		return children(objs...)
	}

	reqs.Reset()
	res, err := set.Apply(t.Context(), parent, desired(true))
	if err != nil {
		t.Fatal(err)
	}
	// ConfigMaps before ClusterRoles (Helm's order), then by namespace.
	want := []string{"parent patch",
		"create ConfigMap " + ns + "/local",
		"create ConfigMap " + other + "/remote",
		"create ClusterRole.rbac.authorization.k8s.io " + roleName}
	if diff := cmp.Diff(want, actions(res), sortConfigMaps); diff != "" {
		t.Errorf("first Apply (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1, "create": 3}, writesOf(reqs.Counts())); diff != "" {
		t.Errorf("first Apply's writes (-want +got):\n%s", diff)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(parent), got); err != nil {
		t.Fatal(err)
	}
	wantRecord := map[string]string{
		applyset.ToolingAnnotation:    testOwner + "/v1",
		applyset.GroupKindsAnnotation: "ClusterRole.rbac.authorization.k8s.io,ConfigMap",
		applyset.NamespacesAnnotation: other,
	}
	if diff := cmp.Diff(wantRecord, got.Annotations); diff != "" {
		t.Errorf("the parent's annotations (-want +got):\n%s", diff)
	}
	if got.Labels[applyset.IDLabel] != id {
		t.Errorf("the parent's %s is %q, want %q", applyset.IDLabel, got.Labels[applyset.IDLabel], id)
	}
	local, remote, role := &corev1.ConfigMap{}, &corev1.ConfigMap{}, &rbacv1.ClusterRole{}
	for key, obj := range map[client.ObjectKey]client.Object{{Namespace: ns, Name: "local"}: local, {Namespace: other, Name: "remote"}: remote, {Name: roleName}: role} {
		if err := c.Get(t.Context(), key, obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetLabels()[applyset.PartOfLabel] != id {
			t.Errorf("%s has %s=%q, want %q", key, applyset.PartOfLabel, obj.GetLabels()[applyset.PartOfLabel], id)
		}
	}
	if !ownership.IsControlledBy(local, parent) {
		t.Errorf("the ConfigMap in the parent's namespace is not controlled by it: %v", local.OwnerReferences)
	}
	if !ownership.IsLinkedTo(remote, parent) || !ownership.IsLinkedTo(role, parent) {
		t.Errorf("the ConfigMap in another namespace and the ClusterRole are not linked to the parent: %v, %v", remote.Labels, role.Labels)
	}

	reqs.Reset()
	res, err = set.Apply(t.Context(), parent, desired(true))
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Writes(); n != 0 {
		t.Errorf("a converged Apply says %d writes:\n%s", n, res)
	}
	if w := writesOf(reqs.Counts()); len(w) != 0 {
		t.Errorf("a converged Apply wrote %v", w)
	}

	reqs.Reset()
	res, err = set.Apply(t.Context(), parent, desired(false))
	if err != nil {
		t.Fatal(err)
	}
	// Pruned in the reverse order: the ClusterRole first.
	want = []string{"parent unchanged",
		"unchanged ConfigMap " + ns + "/local",
		"prune ClusterRole.rbac.authorization.k8s.io " + roleName,
		"prune ConfigMap " + other + "/remote"}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("Apply without two children (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"delete": 2}, writesOf(reqs.Counts())); diff != "" {
		t.Errorf("the prune's writes (-want +got):\n%s", diff)
	}
	for key, obj := range map[client.ObjectKey]client.Object{{Namespace: other, Name: "remote"}: remote, {Name: roleName}: role} {
		if err := c.Get(t.Context(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%s after the prune: %v, want NotFound", key, err)
		}
	}

	// They are gone: the record shrinks, in one patch of the parent.
	reqs.Reset()
	res, err = set.Apply(t.Context(), parent, desired(false))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"parent patch", "unchanged ConfigMap " + ns + "/local"}, actions(res)); diff != "" {
		t.Errorf("the Apply after the prune (-want +got):\n%s", diff)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(parent), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{applyset.ToolingAnnotation: testOwner + "/v1", applyset.GroupKindsAnnotation: "ConfigMap"}, got.Annotations); diff != "" {
		t.Errorf("the parent's annotations after the prune (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"patch": 1}, writesOf(reqs.Counts())); diff != "" {
		t.Errorf("the shrink's writes (-want +got):\n%s", diff)
	}
}

// TestCopiedLabelsAreNotPruned proves that an object another writer made
// with the set's labels copied onto it (kro#1153) is never deleted, nor one
// another owner controls, while the set's own member beside it is.
func TestCopiedLabelsAreNotPruned(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)
	parent := newParent(t, c, ns)
	set := applyset.New(c, testOwner)
	mine := configMap(ns, "mine", "1")
	if _, err := set.Apply(t.Context(), parent, children(mine)); err != nil {
		t.Fatal(err)
	}
	// Another writer copies every label of the member (the set's label and
	// the owner's UID link label included) onto objects of its own.
	copied := configMap(ns, "copied", "theirs")
	copied.Labels = mine.Labels
	if err := c.Create(t.Context(), copied, client.FieldOwner("label-copier")); err != nil {
		t.Fatal(err)
	}
	// And one made by the Set's field owner for another parent and
	// relabelled by hand: controlled by someone else.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-parent"}}
	if err := c.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	controlled := configMap(ns, "controlled", "theirs")
	controlled.Labels = mine.Labels
	if err := ownership.SetController(other, controlled, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), controlled, client.FieldOwner(testOwner)); err != nil {
		t.Fatal(err)
	}

	res, err := set.Apply(t.Context(), parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"parent unchanged", "prune ConfigMap " + ns + "/mine"}, actions(res)); diff != "" {
		t.Errorf("Apply of an empty set (-want +got):\n%s", diff)
	}
	wantKept := []applyset.Ref{{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: ns, Name: "controlled"}, {GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: ns, Name: "copied"}}
	if diff := cmp.Diff(wantKept, res.Kept); diff != "" {
		t.Errorf("Kept (-want +got):\n%s", diff)
	}
	for _, name := range []string{"copied", "controlled"} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the ConfigMap %q that the set did not write: %v", name, err)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(mine), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the set's own member: %v, want NotFound", err)
	}
}

// sortConfigMaps compares the ConfigMap lines of two action lists in any
// order: the order of two namespaces of random names is theirs.
var sortConfigMaps = cmp.Transformer("sortConfigMaps", func(lines []string) []string {
	out := slices.Clone(lines)
	var cms []int
	for i, l := range out {
		if strings.Contains(l, " ConfigMap ") {
			cms = append(cms, i)
		}
	}
	vals := make([]string, len(cms))
	for k, i := range cms {
		vals[k] = out[i]
	}
	slices.Sort(vals)
	for k, i := range cms {
		out[i] = vals[k]
	}
	return out
})

// writesOf keeps the write verbs of request counts.
func writesOf(counts map[string]int) map[string]int {
	out := map[string]int{}
	for verb, n := range counts {
		switch verb {
		case "get", "list", "watch":
		default:
			out[verb] += n
		}
	}
	return out
}

var _ = testenv.Requests{}
