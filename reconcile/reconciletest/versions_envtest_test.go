package reconciletest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// parentReconciler keeps a Widget's Deployment (image spec.message,
// spec.replicas replicas) and says Ready when available says the
// Deployment, read from the API server after the write, is.
type parentReconciler struct {
	client.Client
	apiReader client.Reader
	available func(d *appsv1.Deployment) bool
}

func (r *parentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &testapi.Widget{}
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
	labels := map[string]string{"app": w.Name}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		d.Spec.Replicas = w.Spec.Replicas
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		if len(d.Spec.Template.Spec.Containers) == 0 {
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web"}}
		}
		d.Spec.Template.Spec.Containers[0].Image = w.Spec.Message
		return controllerutil.SetControllerReference(w, d, r.Scheme())
	}); err != nil {
		return reconcile.Result{}, err
	}
	live := &appsv1.Deployment{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		return reconcile.Result{}, err
	}
	before := w.DeepCopy()
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Deploying", ObservedGeneration: w.Generation}
	if r.available(live) {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	meta.SetStatusCondition(&w.Status.Conditions, ready)
	w.Status.ObservedGeneration = w.Generation
	if equality.Semantic.DeepEqual(before.Status, w.Status) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.Status().Patch(ctx, w, client.MergeFrom(before))
}

// availableAtGeneration is what the Deployment controller reports of a
// Deployment whose every replica is available at its latest spec.
func availableAtGeneration(obj client.Object) error {
	d := obj.(*appsv1.Deployment)
	switch want := ptr.Deref(d.Spec.Replicas, 1); {
	case d.Status.ObservedGeneration != d.Generation:
		return fmt.Errorf("its status observed generation %d of %d", d.Status.ObservedGeneration, d.Generation)
	case d.Status.AvailableReplicas != want:
		return fmt.Errorf("%d of %d replicas available", d.Status.AvailableReplicas, want)
	}
	return nil
}

// TestVersionsCatchAParentReadyBeforeItsChild: a Widget's Deployment is
// created, rolled out, then its image changed through the Widget (a spec
// edit of the child: generation 2) and rolled out again, the test playing
// the Deployment controller. Every version of the Widget the API server
// stored that says Ready=True is checked against the Deployment as stored
// just before it: a reconciler that says Ready at once is caught at
// creation, one that ignores the Deployment's observedGeneration only
// after the edit, and the correct one passes both.
func TestVersionsCatchAParentReadyBeforeItsChild(t *testing.T) {
	tests := []struct {
		name      string
		available func(d *appsv1.Deployment) bool
		want      []string // in the check's error; none: no error
	}{
		{
			name:      "correct",
			available: func(d *appsv1.Deployment) bool { return availableAtGeneration(d) == nil },
		},
		{
			name:      "Ready at once",
			available: func(*appsv1.Deployment) bool { return true },
			want:      []string{"said Ready=True at generation 1", "its status observed generation 0 of 1"},
		},
		{
			name: "Ready on the replicas of an older generation",
			available: func(d *appsv1.Deployment) bool {
				return d.Status.AvailableReplicas > 0 && d.Status.AvailableReplicas == ptr.Deref(d.Spec.Replicas, 1)
			},
			want: []string{"said Ready=True at generation 2", "its status observed generation 1 of 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, ns := t.Context(), env.Namespace(t)
			c := env.Client(t)
			versions := rt.RecordVersions(t, c, []client.ObjectList{&testapi.WidgetList{}, &appsv1.DeploymentList{}}, client.InNamespace(ns))

			mgr, err := env.NewManager(testenv.ManagerOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			r := &parentReconciler{Client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), available: tt.available}
			if err := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{}).Owns(&appsv1.Deployment{}).Complete(mgr.Reconciler(r)); err != nil {
				t.Fatal(err)
			}
			mgr.Run(t)

			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
				Spec: testapi.WidgetSpec{Message: "nginx:1.27", Replicas: ptr.To[int32](2)}}
			if err := c.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			step := func(gen int64, image string) {
				t.Helper()
				// The reconciler has acted on the Widget's generation: its
				// Deployment has the image, the Widget a Ready condition of
				// that generation, whatever it says.
				if err := env.WaitFor(ctx, d, "image "+image, func() bool {
					return d.Spec.Template.Spec.Containers[0].Image == image
				}); err != nil {
					t.Fatal(err)
				}
				if err := env.WaitFor(ctx, w, fmt.Sprintf("Ready observed at generation %d", gen), func() bool {
					c := meta.FindStatusCondition(w.Status.Conditions, "Ready")
					return c != nil && c.ObservedGeneration == gen
				}); err != nil {
					t.Fatal(err)
				}
				// The Deployment controller rolls it out.
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas,
					UpdatedReplicas: *d.Spec.Replicas, ReadyReplicas: *d.Spec.Replicas, AvailableReplicas: *d.Spec.Replicas}
				if err := c.Status().Update(ctx, d); err != nil {
					t.Fatal(err)
				}
				if err := env.WaitForCondition(ctx, w, "Ready", metav1.ConditionTrue); err != nil {
					t.Fatal(err)
				}
			}
			step(1, "nginx:1.27")
			patch := client.MergeFrom(w.DeepCopy())
			w.Spec.Message = "nginx:1.28"
			if err := c.Patch(ctx, w, patch); err != nil {
				t.Fatal(err)
			}
			step(2, "nginx:1.28")

			if err := versions.Wait(ctx, w); err != nil {
				t.Fatal(err)
			}
			checked, err := versions.ConditionTrueOnlyWhen(w, "Ready", d, availableAtGeneration)
			if checked < 2 {
				t.Errorf("checked %d versions of the Widget saying Ready, want one at each generation at least", checked)
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("the correct reconciler: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("the reconciler that says Ready too early passed the check")
			}
			t.Logf("the check: %v", err)
			for _, part := range tt.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("the check's error lacks %q:\n%v", part, err)
				}
			}
		})
	}
}

// TestVersionsBeforeIsTheObjectAsStoredThen: Before gives an object as it
// was stored just before a resourceVersion: absent before its creation and
// after its deletion, each version in between, the object created again
// under its name after that; Of lists them all, the deletion included.
func TestVersionsBeforeIsTheObjectAsStoredThen(t *testing.T) {
	t.Parallel()
	ctx, ns := t.Context(), env.Namespace(t)
	c := env.Client(t)
	versions := rt.RecordVersions(t, c, []client.ObjectList{&corev1.ConfigMapList{}}, client.InNamespace(ns))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"v": "1"}}
	var rvs []string // after each write
	write := func(f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, cm.ResourceVersion)
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "marker"}}
	write(func() error { return c.Create(ctx, cm) })
	write(func() error { cm.Data["v"] = "2"; return c.Update(ctx, cm) })
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, marker); err != nil { // a version after the deletion
		t.Fatal(err)
	}
	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"v": "3"}}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := versions.Wait(ctx, again); err != nil {
		t.Fatal(err)
	}
	all, err := versions.Of(cm)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range all {
		got = append(got, fmt.Sprintf("%s deleted=%v", v.Object.(*corev1.ConfigMap).Data["v"], v.Deleted))
	}
	if want := []string{"1 deleted=false", "2 deleted=false", "2 deleted=true", "3 deleted=false"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("versions of the ConfigMap: %v, want %v", got, want)
	}
	rvs = append(rvs, all[2].Object.GetResourceVersion()) // the deletion's
	data := func(rv string) string {
		t.Helper()
		obj, ok, err := versions.Before(cm, rv)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "absent"
		}
		return obj.(*corev1.ConfigMap).Data["v"]
	}
	for _, tc := range []struct{ rv, want string }{
		{rvs[0], "absent"},                 // before its creation
		{rvs[1], "1"},                      // before the update
		{rvs[2], "2"},                      // before the deletion
		{marker.ResourceVersion, "absent"}, // after the deletion
		{again.ResourceVersion, "absent"},  // just before it was created again
	} {
		if got := data(tc.rv); got != tc.want {
			t.Errorf("Before(%s) = %s, want %s", tc.rv, got, tc.want)
		}
	}
	if err := versions.Err(); err != nil {
		t.Errorf("the recording missed versions: %v", err)
	}
}
