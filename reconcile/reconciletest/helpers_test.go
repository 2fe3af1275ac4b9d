package reconciletest_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
)

// recorder is a testing.TB that records failures instead of failing the
// test that owns it, so tests can prove that Converge fails a test. Methods
// Converge does not call panic (through the nil embedded interface).
type recorder struct {
	testing.TB

	mu             sync.Mutex
	errors, fatals []string
	logs           []string
}

func (r *recorder) Helper()                  {}
func (r *recorder) Context() context.Context { return context.Background() }

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// failures returns every Errorf and Fatalf message.
func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]string(nil), r.fatals...), r.errors...)
}

// wantFailure fails t unless rec recorded exactly one failure containing
// every one of parts.
func wantFailure(t *testing.T, rec *recorder, parts ...string) {
	t.Helper()
	f := rec.failures()
	if len(f) != 1 {
		t.Fatalf("recorded failures = %d %q, want exactly one", len(f), f)
	}
	for _, p := range parts {
		if !strings.Contains(f[0], p) {
			t.Errorf("failure message lacks %q:\n%s", p, f[0])
		}
	}
}

// wantNoFailure fails t if rec recorded any failure.
func wantNoFailure(t *testing.T, rec *recorder) {
	t.Helper()
	if f := rec.failures(); len(f) > 0 {
		t.Fatalf("Converge failed, want it to pass:\n%s", strings.Join(f, "\n"))
	}
}

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := testapi.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newFake returns controller-runtime's fake client holding objs, with
// Widget's status subresource.
func newFake(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(newScheme(t)).
		WithStatusSubresource(&testapi.Widget{}).
		WithObjects(objs...).
		Build()
}

func widget(ns, name, message string) *testapi.Widget {
	return &testapi.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       testapi.WidgetSpec{Message: message},
	}
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// widgetReconciler is a small, correct reconciler: it keeps a ConfigMap
// "<name>-config" holding spec.message and reports Ready with
// observedGeneration, writing only what differs.
type widgetReconciler struct {
	client.Client
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.ensureConfigMap(ctx, &w); err != nil {
		return reconcile.Result{}, err
	}
	before := w.Status.DeepCopy()
	w.Status.Phase = "Ready"
	w.Status.ObservedGeneration = w.Generation
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured",
		Message: "config map is up to date", ObservedGeneration: w.Generation,
	})
	if equality.Semantic.DeepEqual(before, &w.Status) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.Status().Update(ctx, &w)
}

func (r *widgetReconciler) ensureConfigMap(ctx context.Context, w *testapi.Widget) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-config"}}
	err := r.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	switch {
	case apierrors.IsNotFound(err):
		cm.Data = map[string]string{"message": w.Spec.Message}
		return r.Create(ctx, cm)
	case err != nil:
		return err
	case cm.Data["message"] != w.Spec.Message:
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Data = map[string]string{"message": w.Spec.Message}
		return r.Patch(ctx, cm, patch)
	}
	return nil
}

// bug is a classic non-convergence bug of a reconciler.
type bug int

const (
	// statusEveryTime writes the status on every run, changed or not.
	statusEveryTime bug = iota + 1
	// annotateEveryTime patches a run counter annotation on every run.
	annotateEveryTime
)

// buggyReconciler does widgetReconciler's work, then makes its bug's write.
type buggyReconciler struct {
	client.Client
	bug  bug
	runs int
}

func (r *buggyReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	good := &widgetReconciler{Client: r.Client}
	if res, err := good.Reconcile(ctx, req); err != nil || !res.IsZero() {
		return res, err
	}
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.runs++
	switch r.bug {
	case statusEveryTime:
		return reconcile.Result{}, r.Status().Update(ctx, &w)
	case annotateEveryTime:
		patch := client.MergeFrom(w.DeepCopy())
		metav1.SetMetaDataAnnotation(&w.ObjectMeta, "example.com/runs", strconv.Itoa(r.runs))
		return reconcile.Result{}, r.Patch(ctx, &w, patch)
	}
	return reconcile.Result{}, nil
}

// waitReconciler waits until its clock reaches at, asking to be requeued
// exactly when the time comes, then records status.phase "Done" once.
type waitReconciler struct {
	client.Client
	clock clock.PassiveClock
	at    time.Time
}

func (r *waitReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var w testapi.Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if now := r.clock.Now(); now.Before(r.at) {
		return reconcile.Result{RequeueAfter: r.at.Sub(now)}, nil
	}
	if w.Status.Phase == "Done" {
		return reconcile.Result{}, nil
	}
	w.Status.Phase = "Done"
	return reconcile.Result{}, r.Status().Update(ctx, &w)
}

// funcReconciler adapts a function, for outcomes that need no API.
type funcReconciler func(n int) (reconcile.Result, error)

type countingFunc struct {
	f    funcReconciler
	runs int
}

func (c *countingFunc) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	c.runs++
	return c.f(c.runs)
}
