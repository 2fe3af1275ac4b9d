package health_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

func TestSummarizeReportsTheWorstChildFirstOfEqualsWins(t *testing.T) {
	cur := health.Health{Status: health.Current, Kind: "Service", Name: "a"}
	slow := health.Health{Status: health.InProgress, Reason: "LessReady", Kind: "Deployment", Name: "b"}
	slower := health.Health{Status: health.InProgress, Reason: "NotBound", Kind: "PersistentVolumeClaim", Name: "c"}
	broken := health.Health{Status: health.Failed, Reason: "BackoffLimitExceeded", Kind: "Job", Name: "d"}
	unknown := health.Health{Kind: "Widget", Name: "e"}
	tests := []struct {
		name     string
		children []health.Health
		want     health.Health
	}{
		{name: "none", want: health.Health{Status: health.Current}},
		{name: "all current", children: []health.Health{cur, cur}, want: health.Health{Status: health.Current}},
		{name: "one in progress", children: []health.Health{cur, slow}, want: slow},
		{name: "the first in progress", children: []health.Health{slower, cur, slow}, want: slower},
		{name: "a failure beats progress", children: []health.Health{slow, broken, cur}, want: broken},
		{name: "no known status counts as in progress", children: []health.Health{cur, unknown}, want: health.Health{Status: health.InProgress, Kind: "Widget", Name: "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, health.Summarize(tt.children...)); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParentConditionNamesTheChildAndItsReason(t *testing.T) {
	tests := []struct {
		h               health.Health
		reason, message string
	}{
		{h: health.Health{Status: health.Failed, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-5f7" has timed out progressing.`, Kind: "Deployment", Namespace: "shop", Name: "web"},
			reason: "DeploymentProgressDeadlineExceeded", message: `Deployment shop/web: ReplicaSet "web-5f7" has timed out progressing.`},
		{h: health.Health{Status: health.InProgress, Reason: "LessAvailable", Message: "waiting", Kind: "Deployment", Namespace: "shop", Name: "web"},
			reason: "DeploymentLessAvailable", message: "Deployment shop/web: waiting"},
		{h: health.Health{Status: health.InProgress, Reason: "Ready", Kind: "ClusterRole", Name: "admin"},
			reason: "ClusterRoleReady", message: "ClusterRole admin"},
		// A reason no condition may carry is cleaned, never refused by the
		// API server in the parent's status write.
		{h: health.Health{Status: health.Failed, Reason: "bad reason: x-y.", Kind: "", Name: "w"},
			reason: "badreason:xy", message: "w"},
		{h: health.Health{Status: health.Failed}, reason: "Failed"},
		{h: health.Health{Status: health.InProgress, Reason: "9"}, reason: "InProgress"},
	}
	for _, tt := range tests {
		reason, message := tt.h.ParentCondition()
		if reason != tt.reason || message != tt.message {
			t.Errorf("%v: ParentCondition = %q, %q; want %q, %q", tt.h, reason, message, tt.reason, tt.message)
		}
	}
}

func TestOfRefusesWhatItCannotRead(t *testing.T) {
	var nilDep *appsv1.Deployment
	tests := []struct {
		name string
		obj  client.Object
	}{
		{name: "nil", obj: nil},
		{name: "typed nil", obj: nilDep},
		{name: "status of a custom resource not an object", obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Database", "metadata": map[string]any{"name": "db"}, "status": "ready"}}},
		{name: "condition type not a string", obj: custom(1, map[string]any{"conditions": []any{map[string]any{"type": 3}}})},
		{name: "conditions not a list", obj: custom(1, map[string]any{"conditions": "Ready"})},
		{name: "observedGeneration not a number", obj: custom(1, map[string]any{"observedGeneration": "2"})},
		{name: "built-in kind of the wrong shape", obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": "three"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := health.Of(tt.obj)
			if !errors.Is(err, health.ErrUnreadable) {
				t.Fatalf("Of = %v, %v; want an error wrapping ErrUnreadable", h, err)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("class %s, want permanent", class)
			}
			if !errors.Is(err, crreconcile.TerminalError(nil)) {
				t.Error("not a terminal error")
			}
		})
	}
}

// TestOfReadsEveryNumberTypeOfContent: an observedGeneration is read as an
// integer whatever Go type content built by hand gives it (JSON decoding
// gives int64, or float64), float32 included; a fraction is not one.
func TestOfReadsEveryNumberTypeOfContent(t *testing.T) {
	for _, og := range []any{int64(2), int(2), int32(2), float64(2), float32(2)} {
		t.Run(fmt.Sprintf("%T", og), func(t *testing.T) {
			h, err := health.Of(custom(3, map[string]any{"observedGeneration": og}))
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != health.InProgress || h.Reason != "LatestGenerationNotObserved" {
				t.Errorf("generation 3, observed %T(2): %v, want InProgress, LatestGenerationNotObserved", og, h)
			}
			h, err = health.Of(custom(2, map[string]any{"observedGeneration": og,
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "observedGeneration": og}}}))
			if err != nil || h.Status != health.Current {
				t.Errorf("generation 2, observed and Ready at %T(2): %v, %v; want Current", og, h, err)
			}
		})
	}
	if _, err := health.Of(custom(3, map[string]any{"observedGeneration": float32(2.5)})); !errors.Is(err, health.ErrUnreadable) {
		t.Errorf("an observedGeneration of 2.5: %v, want ErrUnreadable", err)
	}
}

func TestOfNamesTypedCustomResourcesByTheirKind(t *testing.T) {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Generation: 2}}
	h, err := health.Of(w)
	if err != nil {
		t.Fatal(err)
	}
	// No status yet: its controller has not reported.
	if h.Kind != "Widget" || h.Status != health.InProgress || h.Reason != "NoStatus" {
		t.Errorf("Of(new Widget) = %v", h)
	}
	w.Status.ObservedGeneration = 2
	status.MarkReady(w, "Done", "all good")
	if h, _ := health.Of(w); h.Status != health.Current {
		t.Errorf("Of(ready Widget) = %v", h)
	}
	w.Generation = 3
	if h, _ := health.Of(w); h.Status != health.InProgress || h.Reason != "LatestGenerationNotObserved" {
		t.Errorf("Of(Widget at a newer generation) = %v", h)
	}
}

// rolled is the Deployment web at generation gen, rolled out.
func rolled(gen int64) *appsv1.Deployment {
	return dep(gen, gen, [4]int32{3, 3, 3, 3}, progressed, availableCond)
}

// written is the Deployment web as a write of generation gen returns it:
// the status still describes the previous generation.
func written(gen int64) *appsv1.Deployment {
	return dep(gen, gen-1, [4]int32{3, 3, 3, 3}, progressed, availableCond)
}

// TestOfAllReturnsTheWorstAndStopsAtAnUnreadableChild: OfAll is Summarize
// of each object's Of, and no Health at all when one cannot be read.
func TestOfAllReturnsTheWorstAndStopsAtAnUnreadableChild(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: meta(1)}
	h, err := health.OfAll(svc, rolled(1), written(2))
	if err != nil {
		t.Fatal(err)
	}
	want := health.Summarize(mustOf(t, svc), mustOf(t, rolled(1)), mustOf(t, written(2)))
	if diff := cmp.Diff(want, h); diff != "" || h.Status != health.InProgress || h.Kind != "Deployment" {
		t.Errorf("OfAll (-Summarize of Of +OfAll):\n%s\n%v", diff, h)
	}
	if h, err := health.OfAll(); err != nil || h.Status != health.Current {
		t.Errorf("OfAll() = %v, %v; want Current", h, err)
	}
	if h, err := health.OfAll(rolled(1), nil); !errors.Is(err, health.ErrUnreadable) || h != (health.Health{}) {
		t.Errorf("OfAll with a nil child: %v, %v; want ErrUnreadable and no Health", h, err)
	}
}

func mustOf(t *testing.T, obj client.Object) health.Health {
	t.Helper()
	h, err := health.Of(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestPredicatePassesWhatTheParentActsOn(t *testing.T) {
	base := func() *appsv1.Deployment {
		d := dep(2, 2, [4]int32{3, 3, 1, 1}, progressing, availableCond)
		d.ResourceVersion = "10"
		return d
	}
	tests := []struct {
		name   string
		change func(*appsv1.Deployment)
		want   bool
	}{
		{name: "a resync (the same object)", change: func(*appsv1.Deployment) {}, want: false},
		{name: "a replica count that leaves the health as it was", change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Status.ReadyReplicas = 2
		}, want: false},
		{name: "a heartbeat of a condition", change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Status.Conditions[0].LastUpdateTime = now
		}, want: false},
		{name: "the rollout done", change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 3, 3
			d.Status.Conditions[0] = progressed
		}, want: true},
		{name: "the progress deadline passed", change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Status.Conditions[0] = deadline
		}, want: true},
		{name: "a spec change (someone edited the child)", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.Generation = "11", 3
		}, want: true},
		{name: "a label changed", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.Labels = "11", map[string]string{"app": "x"}
		}, want: true},
		{name: "an annotation changed", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.Annotations = "11", map[string]string{"deployment.kubernetes.io/revision": "2"}
		}, want: true},
		{name: "the owner reference removed", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.OwnerReferences = "11", nil
		}, want: true},
		{name: "a finalizer added", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.Finalizers = "11", []string{"x"}
		}, want: true},
		{name: "deletion began", change: func(d *appsv1.Deployment) {
			d.ResourceVersion, d.DeletionTimestamp = "11", &now
		}, want: true},
	}
	p := health.Predicate()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := base()
			old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Website", Name: "shop", UID: "p", Controller: ptr.To(true)}}
			nu := old.DeepCopy()
			tt.change(nu)
			if got := p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: nu}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
	// Objects without a generation: their data and status cannot be told
	// apart, so every update passes; creations and deletions always do.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}}
	cm2 := cm.DeepCopy()
	cm2.ResourceVersion, cm2.Data = "2", map[string]string{"k": "v"}
	if !p.Update(event.UpdateEvent{ObjectOld: cm, ObjectNew: cm2}) {
		t.Error("a ConfigMap's data change was dropped")
	}
	if !p.Create(event.CreateEvent{Object: cm}) || !p.Delete(event.DeleteEvent{Object: cm}) {
		t.Error("a creation or deletion was dropped")
	}
}

func TestMarkSetsTheParentsConditionsFromItsChildren(t *testing.T) {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}}
	slow := health.Health{Status: health.InProgress, Reason: "LessAvailable", Message: "waiting", Kind: "Deployment", Namespace: "ns", Name: "w"}
	if !health.Mark(w, slow, "Deployed", "serving") {
		t.Fatal("Mark changed nothing")
	}
	if c, _ := status.FindCondition(w, status.TypeReconciling); c.Status != metav1.ConditionTrue || c.Reason != "DeploymentLessAvailable" || c.Message != "Deployment ns/w: waiting" {
		t.Errorf("Reconciling = %+v", c)
	}
	if c, _ := status.FindCondition(w, status.TypeReady); c.Status != metav1.ConditionUnknown {
		t.Errorf("Ready = %+v", c)
	}
	if health.Mark(w, slow, "Deployed", "serving") {
		t.Error("marking the same again changed something")
	}
	broken := health.Health{Status: health.Failed, Reason: "ProgressDeadlineExceeded", Message: "timed out", Kind: "Deployment", Namespace: "ns", Name: "w"}
	health.Mark(w, broken, "Deployed", "serving")
	if c, _ := status.FindCondition(w, status.TypeStalled); c.Status != metav1.ConditionTrue || c.Reason != "DeploymentProgressDeadlineExceeded" {
		t.Errorf("Stalled = %+v", c)
	}
	health.Mark(w, health.Health{Status: health.Current}, "Deployed", "serving")
	if c, _ := status.FindCondition(w, status.TypeReady); c.Status != metav1.ConditionTrue || c.Reason != "Deployed" || c.Message != "serving" {
		t.Errorf("Ready = %+v", c)
	}
	if _, ok := status.FindCondition(w, status.TypeStalled); ok {
		t.Error("Stalled stayed")
	}
}

func TestMessagesCarryNoCountTheControllerMoves(t *testing.T) {
	// Two Deployments at the same stage of a rollout, with different
	// counts, have the same health: a parent writes once per stage.
	a := dep(2, 2, [4]int32{3, 3, 1, 1}, progressing, availableCond)
	b := dep(2, 2, [4]int32{3, 3, 2, 2}, progressing, availableCond)
	ha, _ := health.Of(a)
	hb, _ := health.Of(b)
	if ha != hb {
		t.Errorf("%v\n%v", ha, hb)
	}
	if strings.Contains(ha.Message, "1") || strings.Contains(ha.Message, "2 ") {
		t.Errorf("message %q carries a count of the status", ha.Message)
	}
}
