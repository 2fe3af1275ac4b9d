package suspend_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/suspend"
)

func widget(annotation *string, field bool) *testapi.Widget {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}, Spec: testapi.WidgetSpec{Suspend: field}}
	if annotation != nil {
		w.Annotations = map[string]string{suspend.Annotation: *annotation}
	}
	return w
}

func ptr(s string) *string { return &s }

func TestRequested(t *testing.T) {
	for _, tc := range []struct {
		name       string
		obj        metav1.Object
		want       bool
		wantReason string
	}{
		{name: "nothing", obj: widget(nil, false)},
		{name: "annotation true", obj: widget(ptr("true"), false), want: true, wantReason: `annotation reconcilekit.io/suspend is "true"`},
		{name: "annotation 1", obj: widget(ptr("1"), false), want: true, wantReason: `annotation reconcilekit.io/suspend is "1"`},
		{name: "annotation false", obj: widget(ptr("false"), false)},
		{name: "annotation that is no boolean suspends", obj: widget(ptr("yes"), false), want: true,
			wantReason: `annotation reconcilekit.io/suspend is "yes", not a boolean: suspended until it is false or removed`},
		{name: "empty annotation suspends", obj: widget(ptr(""), false), want: true,
			wantReason: `annotation reconcilekit.io/suspend is "", not a boolean: suspended until it is false or removed`},
		{name: "spec.suspend", obj: widget(nil, true), want: true, wantReason: "spec.suspend is true"},
		{name: "spec.suspend wins over a false annotation", obj: widget(ptr("false"), true), want: true, wantReason: "spec.suspend is true"},
		{name: "a type without the field, annotated", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{suspend.Annotation: "true"}}},
			want: true, wantReason: `annotation reconcilekit.io/suspend is "true"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, got := suspend.Requested(tc.obj)
			if got != tc.want || why != tc.wantReason {
				t.Errorf("Requested = %q, %v; want %q, %v", why, got, tc.wantReason, tc.want)
			}
		})
	}
}

// FuzzRequested: any annotation value suspends, unless strconv.ParseBool
// reads it as false; a suspended object always says why.
func FuzzRequested(f *testing.F) {
	for _, s := range []string{"true", "false", "", "0", "FALSE", "yes", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		why, got := suspend.Requested(widget(&v, false))
		b, err := strconv.ParseBool(v)
		if want := err != nil || b; got != want {
			t.Errorf("Requested(%q) = %v, want %v", v, got, want)
		}
		if got == (why == "") {
			t.Errorf("Requested(%q) = %q, %v: a reason exactly when suspended", v, why, got)
		}
	})
}

func conditionTypes(w *testapi.Widget) map[string]string {
	m := map[string]string{}
	for _, c := range w.Status.Conditions {
		m[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return m
}

func TestMarkAndClear(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      func(*testapi.Widget)
		marked      map[string]string
		cleared     map[string]string
		wantChanged bool
	}{
		{
			name:    "never reconciled: Ready Unknown until resumed",
			before:  func(*testapi.Widget) {},
			marked:  map[string]string{"Suspended": "True/Suspended", "Ready": "Unknown/Suspended"},
			cleared: map[string]string{},
		},
		{
			name:    "ready: stays ready",
			before:  func(w *testapi.Widget) { status.MarkReady(w, "Deployed", "") },
			marked:  map[string]string{"Suspended": "True/Suspended", "Ready": "True/Deployed"},
			cleared: map[string]string{"Ready": "True/Deployed"},
		},
		{
			name:    "reconciling: stays reconciling",
			before:  func(w *testapi.Widget) { status.MarkReconciling(w, "Waiting", "") },
			marked:  map[string]string{"Suspended": "True/Suspended", "Ready": "Unknown/Waiting", "Reconciling": "True/Waiting"},
			cleared: map[string]string{"Ready": "Unknown/Waiting", "Reconciling": "True/Waiting"},
		},
		{
			name:    "stalled: stays stalled",
			before:  func(w *testapi.Widget) { status.MarkStalled(w, "Broken", "") },
			marked:  map[string]string{"Suspended": "True/Suspended", "Ready": "False/Broken", "Stalled": "True/Broken"},
			cleared: map[string]string{"Ready": "False/Broken", "Stalled": "True/Broken"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget(ptr("true"), false)
			tc.before(w)
			if !suspend.Mark(w, "maintenance") {
				t.Error("Mark changed nothing")
			}
			if diff := cmp.Diff(tc.marked, conditionTypes(w)); diff != "" {
				t.Errorf("marked (-want +got):\n%s", diff)
			}
			if suspend.Mark(w, "maintenance") {
				t.Error("Mark again changed something")
			}
			if !suspend.Clear(w) {
				t.Error("Clear changed nothing")
			}
			if diff := cmp.Diff(tc.cleared, conditionTypes(w)); diff != "" {
				t.Errorf("cleared (-want +got):\n%s", diff)
			}
			if suspend.Clear(w) {
				t.Error("Clear again changed something")
			}
		})
	}
}

// TestKstatusReadsASuspendedObjectAsItWasLeft is the oracle test: cli-utils'
// kstatus reads a marked object as the last reconcile left it, an edit made
// while suspended as not observed, and one never reconciled as in progress.
func TestKstatusReadsASuspendedObjectAsItWasLeft(t *testing.T) {
	compute := func(w *testapi.Widget) kstatus.Status {
		t.Helper()
		w.APIVersion, w.Kind = testapi.GroupVersion.String(), "Widget"
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		if err != nil {
			t.Fatal(err)
		}
		res, err := kstatus.Compute(&unstructured.Unstructured{Object: m})
		if err != nil {
			t.Fatal(err)
		}
		return res.Status
	}
	for _, tc := range []struct {
		name   string
		before func(*testapi.Widget)
		want   kstatus.Status
	}{
		{"never reconciled", func(*testapi.Widget) {}, kstatus.InProgressStatus},
		{"ready", func(w *testapi.Widget) { status.MarkReady(w, "", "") }, kstatus.CurrentStatus},
		{"reconciling", func(w *testapi.Widget) { status.MarkReconciling(w, "", "") }, kstatus.InProgressStatus},
		{"stalled", func(w *testapi.Widget) { status.MarkStalled(w, "", "") }, kstatus.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget(ptr("true"), false)
			tc.before(w)
			if len(w.Status.Conditions) > 0 {
				status.ObserveGeneration(w)
			}
			suspend.Mark(w, "maintenance")
			if got := compute(w); got != tc.want {
				t.Errorf("kstatus of the suspended object = %s, want %s", got, tc.want)
			}
			if tc.want == kstatus.CurrentStatus {
				// Edited while suspended: not applied, so not observed.
				w.Generation++
				suspend.Mark(w, "maintenance")
				if got := compute(w); got != kstatus.InProgressStatus {
					t.Errorf("kstatus after an edit while suspended = %s, want InProgress", got)
				}
			}
		})
	}
}

func TestPredicatePassesSuspendingAndResuming(t *testing.T) {
	p := suspend.Predicate()
	for _, tc := range []struct {
		name     string
		old, new *testapi.Widget
		want     bool
	}{
		{"annotation added", widget(nil, false), widget(ptr("true"), false), true},
		{"annotation removed", widget(ptr("true"), false), widget(nil, false), true},
		{"annotation set false", widget(ptr("true"), false), widget(ptr("false"), false), true},
		{"spec.suspend set", widget(nil, false), widget(nil, true), true},
		{"still suspended", widget(ptr("true"), false), widget(ptr("1"), false), false},
		{"never suspended", widget(nil, false), widget(ptr("false"), false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if p.Update(event.UpdateEvent{ObjectNew: widget(nil, false)}) {
		t.Error("an update without its old object passed")
	}
	if !p.Create(event.CreateEvent{Object: widget(nil, false)}) || !p.Delete(event.DeleteEvent{Object: widget(nil, false)}) {
		t.Error("create or delete events were dropped")
	}
}
