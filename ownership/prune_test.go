package ownership_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

func keepPrefix(prefix string) func(client.Object) bool {
	return func(o client.Object) bool { return strings.HasPrefix(o.GetName(), prefix) }
}

func objectNames(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func serverConfigMaps(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" && cm.DeletionTimestamp.IsZero() {
			out = append(out, cm.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestPruneDeletesExactlyTheUndesiredChildren(t *testing.T) {
	c, reqs := countingClient(t)
	ns := env.Namespace(t)
	owner, _ := family(t, c, ns)
	reqs.Snapshot()

	// Keep owned-1; everything else is "undesired", but only owned-2 is
	// the owner's to delete.
	deleted, err := ownership.Prune(t.Context(), c, owner, &corev1.ConfigMapList{}, keepPrefix("owned-1"))
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if diff := cmp.Diff([]string{"owned-2"}, objectNames(deleted)); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if n := reqs.Snapshot()["delete"]; n != 1 {
		t.Errorf("Prune sent %d deletes, want 1", n)
	}
	want := []string{"controlled-by-other", "owned-1", "plain-owner-ref", "unowned"}
	if diff := cmp.Diff(want, serverConfigMaps(t, c, ns)); diff != "" {
		t.Errorf("ConfigMaps left on the server (-want +got):\n%s", diff)
	}

	// Nothing left to prune: no deletes.
	deleted, err = ownership.Prune(t.Context(), c, owner, &corev1.ConfigMapList{}, keepPrefix("owned-1"))
	if err != nil || len(deleted) != 0 {
		t.Errorf("second Prune = (%v, %v), want nothing deleted", objectNames(deleted), err)
	}
	if n := reqs.Snapshot()["delete"]; n != 0 {
		t.Errorf("the second Prune sent %d deletes, want none", n)
	}
}

// TestPruneSendsThePropagationPolicy shows the policy on the real API
// server: with foreground propagation the server keeps the child with a
// foregroundDeletion finalizer until its dependents are gone (envtest has
// no garbage collector to finish it), with the default background policy
// it is gone at once.
func TestPruneSendsThePropagationPolicy(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"foreground", "background"} {
		cm := configMap(ns, name)
		if err := ownership.SetController(owner, cm, env.Scheme); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{}, keepPrefix("background"),
		ownership.WithPropagation(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	fg := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foreground"}, fg); err != nil {
		t.Fatal(err)
	}
	if fg.DeletionTimestamp.IsZero() || !slices.Contains(fg.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("foreground-pruned child: deletionTimestamp %v, finalizers %v; want deleting with %q",
			fg.DeletionTimestamp, fg.Finalizers, metav1.FinalizerDeleteDependents)
	}
	// A child already being deleted is not deleted again.
	deleted, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{}, keepPrefix("nothing"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"background"}, objectNames(deleted)); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "background"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("background-pruned child: %v, want NotFound", err)
	}
}

// TestPruneLeavesAChildThatChangedAfterTheList replaces a child, between
// Prune's list and its delete, with a new object of the same name that
// someone else controls. The delete's preconditions make the server refuse:
// the newcomer survives and Prune reports a Conflict.
func TestPruneLeavesAChildThatChangedAfterTheList(t *testing.T) {
	env.Require(t)
	direct := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	owner, other := family(t, direct, ns)

	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if obj.GetName() == "owned-2" {
				if err := c.Delete(ctx, configMap(ns, "owned-2")); err != nil {
					t.Errorf("racing delete: %v", err)
				}
				newcomer := configMap(ns, "owned-2")
				if err := ownership.SetController(other, newcomer, env.Scheme); err != nil {
					t.Error(err)
				}
				if err := c.Create(ctx, newcomer); err != nil {
					t.Errorf("racing create: %v", err)
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
	})

	deleted, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{}, keepPrefix("keep"))
	if !apierrors.IsConflict(err) {
		t.Errorf("Prune error = %v, want a Conflict for the replaced child", err)
	}
	if diff := cmp.Diff([]string{"owned-1"}, objectNames(deleted)); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	newcomer := &corev1.ConfigMap{}
	if err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owned-2"}, newcomer); err != nil {
		t.Fatalf("the newcomer was deleted: %v", err)
	}
	if !ownership.IsControlledBy(newcomer, other) {
		t.Errorf("owned-2 on the server is not the newcomer")
	}
}

func TestPruneLinkedChildrenInOtherNamespaces(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ownerNS, childNS := env.Namespace(t), env.Namespace(t)
	owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ownerNS, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"keep-me", "drop-me"} {
		cm := configMap(childNS, name)
		if err := ownership.SetLink(owner, cm, env.Scheme); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, configMap(childNS, "drop-unlinked")); err != nil {
		t.Fatal(err)
	}

	deleted, err := ownership.Prune(ctx, c, owner, &corev1.ConfigMapList{}, keepPrefix("keep"),
		ownership.WithListOptions(ownership.LinkedTo(owner)), ownership.InAllNamespaces())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"drop-me"}, objectNames(deleted)); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"drop-unlinked", "keep-me"}, serverConfigMaps(t, c, childNS)); diff != "" {
		t.Errorf("ConfigMaps left (-want +got):\n%s", diff)
	}
}

func waitForCache(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &corev1.ConfigMapList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		count := 0
		for _, cm := range list.Items {
			if cm.Name != "kube-root-ca.crt" {
				count++
			}
		}
		return count >= n, nil
	})
	if err != nil {
		t.Fatalf("cache never held %d ConfigMaps: %v", n, err)
	}
}

// TestPruneRejectsBadInput proves Prune and PruneListed refuse a call that
// cannot run before sending anything (the nil client would panic on a
// request), with a permanent error naming the problem.
func TestPruneRejectsBadInput(t *testing.T) {
	keepAll := func(client.Object) bool { return true }
	tests := []struct {
		name    string
		owner   client.Object
		keep    func(client.Object) bool
		opts    []ownership.Option
		want    error
		wantMsg string
	}{
		{"nil keep func", widget("ns", "o", "uid"), nil, nil,
			ownership.ErrInvalidPrune, "ownership: invalid prune: keep func is nil"},
		{"unknown propagation policy", widget("ns", "o", "uid"), keepAll, []ownership.Option{ownership.WithPropagation("Later")},
			ownership.ErrInvalidPrune, `ownership: invalid prune: propagation policy "Later" is none of Orphan, Background and Foreground`},
		{"empty propagation policy", widget("ns", "o", "uid"), keepAll, []ownership.Option{ownership.WithPropagation("")},
			ownership.ErrInvalidPrune, `ownership: invalid prune: propagation policy "" is none of Orphan, Background and Foreground`},
		{"owner without a UID", widget("ns", "o", ""), keepAll, nil,
			ownership.ErrNoUID, `pruning children of "ns/o": ownership: owner has no UID: read or create it on the API server first`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for fn, prune := range map[string]func() ([]client.Object, error){
				"Prune": func() ([]client.Object, error) {
					return ownership.Prune(t.Context(), nil, tt.owner, &corev1.ConfigMapList{}, tt.keep, tt.opts...)
				},
				"PruneListed": func() ([]client.Object, error) {
					return ownership.PruneListed(t.Context(), nil, tt.owner, &corev1.ConfigMapList{}, tt.keep, tt.opts...)
				},
			} {
				deleted, err := prune()
				if !errors.Is(err, tt.want) || err.Error() != tt.wantMsg {
					t.Errorf("%s = %v, want %q wrapping %v", fn, err, tt.wantMsg, tt.want)
				}
				if class, _ := rkerrors.Classify(err); class != rkerrors.ClassPermanent || !errors.Is(err, reconcile.TerminalError(nil)) {
					t.Errorf("%s error class = %v, terminal %v; want permanent and terminal", fn, class, errors.Is(err, reconcile.TerminalError(nil)))
				}
				if deleted != nil {
					t.Errorf("%s deleted %v", fn, deleted)
				}
			}
		})
	}
	// Every documented policy is accepted: PruneListed of an empty list
	// gets past validation and deletes nothing.
	for _, p := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		if _, err := ownership.PruneListed(t.Context(), nil, widget("ns", "o", "uid"), &corev1.ConfigMapList{}, keepAll, ownership.WithPropagation(p)); err != nil {
			t.Errorf("PruneListed with propagation %q = %v", p, err)
		}
	}
}
