package health_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

// A Deployment mid-rollout is InProgress, one past its progress deadline
// Failed; a parent's conditions name the worst child.
func ExampleOf() {
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}},
	}
	h, _ := health.Of(web)
	fmt.Println(h.Status, h.Reason, h.Message)

	web.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-5f7" has timed out progressing.`}
	failed, _ := health.Of(web)
	db := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	bound, _ := health.Of(db)
	reason, message := health.Summarize(bound, failed).ParentCondition()
	fmt.Println(reason)
	fmt.Println(message)
	// Output:
	// InProgress LessUpdated waiting for 3 replicas to be updated
	// DeploymentProgressDeadlineExceeded
	// Deployment shop/web: ReplicaSet "web-5f7" has timed out progressing.
}

// A parent's children, read through its client: the worst of them is what
// its conditions say.
func ExampleOfAll() {
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		// What Ensure's patch of generation 2 returned: the Deployment
		// controller has not observed it yet.
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	children, err := health.OfAll(svc, web)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(children.Status, children.Reason)
	fmt.Println(children.ParentCondition())

	web.Status.ObservedGeneration = 2
	web.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	children, _ = health.OfAll(svc, web)
	fmt.Println(children.Status)
	// Output:
	// InProgress LatestGenerationNotObserved
	// DeploymentLatestGenerationNotObserved Deployment shop/web: generation 2 not yet observed by its controller (its status describes generation 1)
	// Current
}

// A reconciler that sets its conditions with package status marks its
// parent from its children's health.
func ExampleMark() {
	site := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "site", Generation: 1}}
	children := health.Health{Status: health.InProgress, Reason: "LessAvailable",
		Message: "waiting for the updated replicas to be available", Kind: "Deployment", Namespace: "shop", Name: "web"}
	health.Mark(site, children, "Deployed", "serving shop.example.com")
	c, _ := status.FindCondition(site, status.TypeReconciling)
	fmt.Println(c.Reason+":", c.Message)

	health.Mark(site, health.Summarize(), "Deployed", "serving shop.example.com")
	c, _ = status.FindCondition(site, status.TypeReady)
	fmt.Println(c.Status, c.Reason+":", c.Message)
	// Output:
	// DeploymentLessAvailable: Deployment shop/web: waiting for the updated replicas to be available
	// True Deployed: serving shop.example.com
}
