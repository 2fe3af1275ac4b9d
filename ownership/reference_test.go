package ownership_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rkerrors "github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/ownership"
)

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, testapi.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func widget(ns, name, uid string) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// controllerRef is the reference controllerutil writes for a Widget.
func controllerRef(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "testing.reconcilekit.io/v1", Kind: "Widget", Name: name,
		UID: types.UID(uid), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// TestSetControllerWritesWhatControllerutilWrites proves the two can be
// mixed: on every input controllerutil accepts (with an owner that has a
// UID), SetController leaves the same owner references.
func TestSetControllerWritesWhatControllerutilWrites(t *testing.T) {
	scheme := testScheme(t)
	clusterOwner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cr", UID: "uid-cr"}}
	tests := []struct {
		name       string
		owner, obj client.Object
	}{
		{"same namespace", widget("ns", "owner", "uid-1"), configMap("ns", "child")},
		{"cluster-scoped owner of a namespaced object", clusterOwner, configMap("ns", "child")},
		{"cluster-scoped owner of a cluster-scoped object", clusterOwner, clusterRole("child")},
		{"keeps other owners", widget("ns", "owner", "uid-1"), func() client.Object {
			cm := configMap("ns", "child")
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "uid-s"}}
			return cm
		}()},
		{"same owner again, recreated with a new UID", widget("ns", "owner", "uid-2"), func() client.Object {
			cm := configMap("ns", "child")
			cm.OwnerReferences = []metav1.OwnerReference{controllerRef("owner", "uid-1")}
			return cm
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := tt.obj.DeepCopyObject().(client.Object)
			theirs := tt.obj.DeepCopyObject().(client.Object)
			if err := ownership.SetController(tt.owner, ours, scheme); err != nil {
				t.Fatalf("SetController: %v", err)
			}
			if err := controllerutil.SetControllerReference(tt.owner, theirs, scheme); err != nil {
				t.Fatalf("controllerutil.SetControllerReference: %v", err)
			}
			if diff := cmp.Diff(theirs.GetOwnerReferences(), ours.GetOwnerReferences()); diff != "" {
				t.Errorf("owner references (-controllerutil +ours):\n%s", diff)
			}
			if !ownership.IsControlledBy(ours, tt.owner) {
				t.Errorf("IsControlledBy = false after SetController")
			}

			ours, theirs = tt.obj.DeepCopyObject().(client.Object), tt.obj.DeepCopyObject().(client.Object)
			if err := ownership.SetOwner(tt.owner, ours, scheme); err != nil {
				t.Fatalf("SetOwner: %v", err)
			}
			if err := controllerutil.SetOwnerReference(tt.owner, theirs, scheme); err != nil {
				t.Fatalf("controllerutil.SetOwnerReference: %v", err)
			}
			if diff := cmp.Diff(theirs.GetOwnerReferences(), ours.GetOwnerReferences()); diff != "" {
				t.Errorf("SetOwner references (-controllerutil +ours):\n%s", diff)
			}
		})
	}
}

// TestSetControllerTypedErrors proves each failure of SetController and
// SetOwner is matched by its type or sentinel and classified by the errors
// package: permanent and terminal when no retry can fix it, transient for
// an object another owner controls (it may let go).
func TestSetControllerTypedErrors(t *testing.T) {
	scheme := testScheme(t)
	controlledByOther := configMap("ns", "child")
	controlledByOther.OwnerReferences = []metav1.OwnerReference{controllerRef("other", "uid-other")}
	tests := []struct {
		name       string
		owner, obj client.Object
		// check matches the error; wantTerminal says whether it is a
		// controller-runtime terminal error; wantClass is errors.Classify's
		// verdict.
		check        func(error) bool
		wantTerminal bool
		wantClass    rkerrors.Class
	}{
		{"owner in another namespace", widget("a", "owner", "uid-1"), configMap("b", "child"),
			func(err error) bool {
				var e *ownership.CrossNamespaceError
				return errors.As(err, &e) && e.Owner.Namespace == "a" && e.Object.Namespace == "b"
			}, true, rkerrors.ClassPermanent},
		{"namespaced owner of a cluster-scoped object", widget("a", "owner", "uid-1"), clusterRole("child"),
			func(err error) bool {
				var e *ownership.ClusterScopedError
				return errors.As(err, &e) && e.Object == "child"
			}, true, rkerrors.ClassPermanent},
		{"controlled by another owner", widget("ns", "owner", "uid-1"), controlledByOther,
			func(err error) bool {
				var e *ownership.AlreadyOwnedError
				var cu *controllerutil.AlreadyOwnedError
				return errors.As(err, &e) && e.Owner.Name == "other" && errors.As(err, &cu) && cu.Owner.Name == "other"
			}, false, rkerrors.ClassTransient},
		{"owner without a UID", widget("ns", "owner", ""), configMap("ns", "child"),
			func(err error) bool { return errors.Is(err, ownership.ErrNoUID) }, true, rkerrors.ClassPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj.DeepCopyObject().(client.Object)
			err := ownership.SetController(tt.owner, obj, scheme)
			if err == nil || !tt.check(err) {
				t.Fatalf("SetController error = %v, does not match", err)
			}
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tt.wantTerminal {
				t.Errorf("errors.Is(err, reconcile.TerminalError(nil)) = %v, want %v", got, tt.wantTerminal)
			}
			if got, _ := rkerrors.Classify(err); got != tt.wantClass {
				t.Errorf("Classify = %v, want %v", got, tt.wantClass)
			}
			if diff := cmp.Diff(tt.obj.GetOwnerReferences(), obj.GetOwnerReferences()); diff != "" {
				t.Errorf("a failed SetController changed the object (-want +got):\n%s", diff)
			}
			if tt.name == "controlled by another owner" {
				return // SetOwner allows several owners
			}
			if err := ownership.SetOwner(tt.owner, obj, scheme); err == nil || !tt.check(err) {
				t.Errorf("SetOwner error = %v, does not match", err)
			}
		})
	}
}

func TestSetOwnerAllowsSeveralOwners(t *testing.T) {
	scheme := testScheme(t)
	obj := configMap("ns", "child")
	a, b := widget("ns", "a", "uid-a"), widget("ns", "b", "uid-b")
	if err := ownership.SetController(a, obj, scheme); err != nil {
		t.Fatal(err)
	}
	if err := ownership.SetOwner(b, obj, scheme); err != nil {
		t.Fatal(err)
	}
	if len(obj.OwnerReferences) != 2 || !ownership.IsControlledBy(obj, a) || ownership.IsControlledBy(obj, b) {
		t.Errorf("owner references = %+v, want a as controller and b as plain owner", obj.OwnerReferences)
	}
}

func TestIsControlledBy(t *testing.T) {
	owner := widget("ns", "owner", "uid-1")
	withRefs := func(refs ...metav1.OwnerReference) client.Object {
		cm := configMap("ns", "child")
		cm.OwnerReferences = refs
		return cm
	}
	plain := controllerRef("owner", "uid-1")
	plain.Controller = nil
	tests := []struct {
		name  string
		obj   client.Object
		owner client.Object
		want  bool
	}{
		{"controller reference to the owner", withRefs(controllerRef("owner", "uid-1")), owner, true},
		{"no references", withRefs(), owner, false},
		{"plain owner reference", withRefs(plain), owner, false},
		{"same name, another UID (recreated owner)", withRefs(controllerRef("owner", "uid-old")), owner, false},
		{"owner without UID never matches", withRefs(controllerRef("owner", "")), widget("ns", "owner", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownership.IsControlledBy(tt.obj, tt.owner); got != tt.want {
				t.Errorf("IsControlledBy = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReferencesAreAcceptedByTheAPIServer writes children with references
// set by SetController and SetOwner to a real API server.
func TestReferencesAreAcceptedByTheAPIServer(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	a, b := &testapi.Widget{}, &testapi.Widget{}
	for name, w := range map[string]*testapi.Widget{"a": a, "b": b} {
		w.Namespace, w.Name = ns, name
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	cm := configMap(ns, "child")
	if err := ownership.SetController(a, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := ownership.SetOwner(b, cm, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create child: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if !ownership.IsControlledBy(got, a) || ownership.IsControlledBy(got, b) {
		t.Errorf("stored owner references %+v: want a as controller, b not", got.OwnerReferences)
	}
}

// TestOwnershipErrorsArePermanentThroughTheErrorsPackage proves every
// failure of this package that no retry can fix is classified permanent by
// errors.Classify and is terminal for controller-runtime, from every
// function that returns it and through further wrapping; that a
// hand-built *CrossNamespaceError or *ClusterScopedError is so only wrapped
// with errors.Permanent (the error types themselves say nothing of it: one
// "permanent", the errors package's); and that *AlreadyOwnedError stays
// transient and not terminal.
func TestOwnershipErrorsArePermanentThroughTheErrorsPackage(t *testing.T) {
	scheme := testScheme(t)
	noUID := widget("ns", "owner", "")
	controlled := configMap("ns", "child")
	controlled.OwnerReferences = []metav1.OwnerReference{controllerRef("other", "uid-other")}
	linked := configMap("ns", "child")
	if err := ownership.SetLink(widget("ns", "other", "uid-other"), linked, scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	tests := []struct {
		name          string
		err           error
		wantPermanent bool
	}{
		{"SetController across namespaces", ownership.SetController(widget("a", "o", "uid"), configMap("b", "c"), scheme), true},
		{"SetOwner across namespaces", ownership.SetOwner(widget("a", "o", "uid"), configMap("b", "c"), scheme), true},
		{"SetController of a cluster-scoped object", ownership.SetController(widget("a", "o", "uid"), clusterRole("c"), scheme), true},
		{"SetOwner of a cluster-scoped object", ownership.SetOwner(widget("a", "o", "uid"), clusterRole("c"), scheme), true},
		{"SetController without a UID", ownership.SetController(noUID, configMap("ns", "c"), scheme), true},
		{"SetOwner without a UID", ownership.SetOwner(noUID, configMap("ns", "c"), scheme), true},
		{"SetLink without a UID", ownership.SetLink(noUID, configMap("ns", "c"), scheme), true},
		{"ListOwned without a UID", ownership.ListOwned(t.Context(), c, noUID, &corev1.ConfigMapList{}), true},
		{"ListLinked without a UID", ownership.ListLinked(t.Context(), c, noUID, &corev1.ConfigMapList{}), true},
		{"hand-built CrossNamespaceError, marked permanent", rkerrors.Permanent(&ownership.CrossNamespaceError{}), true},
		{"hand-built ClusterScopedError, marked permanent", rkerrors.Permanent(&ownership.ClusterScopedError{}), true},
		{"hand-built CrossNamespaceError, unmarked", &ownership.CrossNamespaceError{}, false},
		{"hand-built ClusterScopedError, unmarked", &ownership.ClusterScopedError{}, false},
		{"SetController of an object another owner controls", ownership.SetController(widget("ns", "o", "uid"), controlled, scheme), false},
		{"SetLink of an object linked to another owner", ownership.SetLink(widget("ns", "o", "uid"), linked, scheme), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			for _, err := range []error{tt.err, fmt.Errorf("reconcile: %w", tt.err)} {
				class, _ := rkerrors.Classify(err)
				terminal := errors.Is(err, reconcile.TerminalError(nil))
				if (class == rkerrors.ClassPermanent) != tt.wantPermanent || terminal != tt.wantPermanent {
					t.Errorf("%v: Classify = %v, terminal = %v; want permanent and terminal %v", err, class, terminal, tt.wantPermanent)
				}
			}
		})
	}
}
