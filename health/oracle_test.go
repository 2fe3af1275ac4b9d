package health_test

import (
	"math"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/health"
)

// A case is one object, what Of says of it, and what kstatus (cli-utils,
// the library Flux, kpt, Helm 4 and Argo CD's kstatus mode use) says of the
// same object. When the two differ, why says why ours differs on purpose;
// when they agree, why is empty: a difference nobody wrote down fails.
type oracleCase struct {
	name    string
	obj     client.Object
	want    health.Status
	reason  string
	kstatus kstatus.Status // what kstatus.Compute says
	why     string         // why we differ; empty when we agree
}

var (
	now     = metav1.Unix(1_800_000_000, 0)
	ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
)

func meta(gen int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: gen, UID: "uid-web"}
}

// dep is a Deployment of spec replicas 3 at generation gen, its status
// observed at og, with replica counts (replicas, updated, ready, available)
// and conditions.
func dep(gen, og int64, counts [4]int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: meta(gen),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), ProgressDeadlineSeconds: ptr.To[int32](600)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: og, Replicas: counts[0], UpdatedReplicas: counts[1],
			ReadyReplicas: counts[2], AvailableReplicas: counts[3], Conditions: conds},
	}
}

var (
	progressed     = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	progressing    = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}
	deadline       = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-5f7" has timed out progressing.`}
	availableCond  = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}
	replicaFailure = appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "web-5f7-x" is forbidden: exceeded quota: pods`}
)

func jobWith(start bool, conds ...batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: meta(1)}
	if start {
		j.Status.StartTime = &now
	}
	for _, c := range conds {
		reason := ""
		if c == batchv1.JobFailed || c == batchv1.JobFailureTarget {
			reason = "BackoffLimitExceeded"
		}
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue, Reason: reason, Message: "Job has reached the specified backoff limit"})
	}
	return j
}

func podIn(phase corev1.PodPhase, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(1), Status: corev1.PodStatus{Phase: phase}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}

func waiting(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "web",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "back-off pulling image"}}})
	}
}

// custom is a custom resource of a kind no rule knows, with the given
// status (nil: none).
func custom(gen int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Database",
		"metadata": map[string]any{"namespace": "shop", "name": "db", "generation": gen, "uid": "uid-db"},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func cond(typ, status string, og int64) map[string]any {
	c := map[string]any{"type": typ, "status": status, "reason": typ + status, "message": "says " + status}
	if og != 0 {
		c["observedGeneration"] = og
	}
	return c
}

func conds(cs ...map[string]any) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

var oracleCases = []oracleCase{
	// Deployment
	{name: "deployment rolled out", obj: dep(2, 2, [4]int32{3, 3, 3, 3}, progressed, availableCond),
		want: health.Current, reason: "Available", kstatus: kstatus.CurrentStatus},
	{name: "deployment at a generation its controller has not observed", obj: dep(3, 2, [4]int32{3, 3, 3, 3}, progressed, availableCond),
		want: health.InProgress, reason: "LatestGenerationNotObserved", kstatus: kstatus.InProgressStatus},
	{name: "deployment never observed (no status yet)", obj: dep(1, 0, [4]int32{3, 3, 3, 3}, progressed, availableCond),
		want: health.InProgress, reason: "LatestGenerationNotObserved", kstatus: kstatus.CurrentStatus,
		why: "kstatus skips the generation check when status.observedGeneration is absent; the deployment controller always records it, so its absence means the status describes no generation"},
	{name: "deployment creating replicas", obj: dep(2, 2, [4]int32{1, 1, 0, 0}, progressing),
		want: health.InProgress, reason: "LessReplicas", kstatus: kstatus.InProgressStatus},
	{name: "deployment updating replicas", obj: dep(2, 2, [4]int32{4, 1, 3, 3}, progressing, availableCond),
		want: health.InProgress, reason: "LessUpdated", kstatus: kstatus.InProgressStatus},
	{name: "deployment with old replicas terminating", obj: dep(2, 2, [4]int32{4, 3, 3, 3}, progressing, availableCond),
		want: health.InProgress, reason: "ExtraPods", kstatus: kstatus.InProgressStatus},
	{name: "deployment waiting for updated replicas to be available", obj: dep(2, 2, [4]int32{3, 3, 2, 2}, progressing, availableCond),
		want: health.InProgress, reason: "LessAvailable", kstatus: kstatus.InProgressStatus},
	{name: "deployment whose new ReplicaSet is not yet available", obj: dep(2, 2, [4]int32{3, 3, 3, 3}, progressing, availableCond),
		want: health.InProgress, reason: "ReplicaSetNotAvailable", kstatus: kstatus.InProgressStatus},
	{name: "deployment not available", obj: dep(2, 2, [4]int32{3, 3, 3, 3}, progressed),
		want: health.InProgress, reason: "DeploymentNotAvailable", kstatus: kstatus.InProgressStatus},
	{name: "deployment past its progress deadline", obj: dep(2, 2, [4]int32{3, 1, 2, 2}, deadline, availableCond),
		want: health.Failed, reason: "ProgressDeadlineExceeded", kstatus: kstatus.FailedStatus},
	{name: "deployment whose Pods are refused", obj: dep(2, 2, [4]int32{0, 0, 0, 0}, progressing, replicaFailure),
		want: health.InProgress, reason: "FailedCreate", kstatus: kstatus.InProgressStatus},
	{name: "deployment being deleted", obj: func() client.Object {
		d := dep(2, 2, [4]int32{3, 3, 3, 3}, progressed, availableCond)
		d.DeletionTimestamp = &now
		return d
	}(), want: health.InProgress, reason: "Terminating", kstatus: kstatus.TerminatingStatus},
	{name: "deployment without a progress deadline", obj: func() client.Object {
		d := dep(1, 1, [4]int32{3, 3, 3, 3}, availableCond)
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
		return d
	}(), want: health.Current, reason: "Available", kstatus: kstatus.CurrentStatus},

	// StatefulSet, DaemonSet, ReplicaSet
	{name: "statefulset ready", obj: &appsv1.StatefulSet{ObjectMeta: meta(1), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r1"}},
		want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "statefulset mid-update", obj: &appsv1.StatefulSet{ObjectMeta: meta(2), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r2"}},
		want: health.InProgress, reason: "RevisionMismatch", kstatus: kstatus.InProgressStatus},
	{name: "statefulset with replicas not ready", obj: &appsv1.StatefulSet{ObjectMeta: meta(1), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 1}},
		want: health.InProgress, reason: "LessReady", kstatus: kstatus.InProgressStatus},
	{name: "daemonset scheduled everywhere", obj: &appsv1.DaemonSet{ObjectMeta: meta(1),
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}},
		want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "daemonset updating", obj: &appsv1.DaemonSet{ObjectMeta: meta(1),
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberAvailable: 3, NumberReady: 3}},
		want: health.InProgress, reason: "LessUpdated", kstatus: kstatus.InProgressStatus},
	{name: "replicaset available", obj: &appsv1.ReplicaSet{ObjectMeta: meta(1), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}},
		want: health.Current, reason: "Available", kstatus: kstatus.CurrentStatus},

	// Job
	{name: "job complete", obj: jobWith(true, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete),
		want: health.Current, reason: "Complete", kstatus: kstatus.CurrentStatus},
	{name: "job failed", obj: jobWith(true, batchv1.JobFailureTarget, batchv1.JobFailed),
		want: health.Failed, reason: "BackoffLimitExceeded", kstatus: kstatus.FailedStatus},
	{name: "job not started", obj: jobWith(false),
		want: health.InProgress, reason: "JobNotStarted", kstatus: kstatus.InProgressStatus},
	{name: "job running", obj: jobWith(true),
		want: health.InProgress, reason: "JobRunning", kstatus: kstatus.CurrentStatus,
		why: "kstatus calls a running Job Current (it exists and works); a parent that created a Job waits for its work to be done"},
	{name: "job whose failure is decided, its Pods still terminating", obj: jobWith(true, batchv1.JobFailureTarget),
		want: health.Failed, reason: "BackoffLimitExceeded", kstatus: kstatus.CurrentStatus,
		why: "FailureTarget announces Failed (Kubernetes 1.31+): the Job will fail, whatever its Pods do now"},

	// Pod
	{name: "pod ready", obj: podIn(corev1.PodRunning, ready), want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "pod succeeded", obj: podIn(corev1.PodSucceeded), want: health.Current, reason: "Succeeded", kstatus: kstatus.CurrentStatus},
	{name: "pod failed", obj: podIn(corev1.PodFailed), want: health.Failed, reason: "PodFailed", kstatus: kstatus.CurrentStatus,
		why: "kstatus calls a failed Pod Current (\"completed, but not successfully\"); a parent whose Pod failed has failed"},
	{name: "pod crash looping", obj: podIn(corev1.PodRunning, waiting("CrashLoopBackOff")),
		want: health.Failed, reason: "ContainerCrashLooping", kstatus: kstatus.FailedStatus},
	{name: "pod pulling an image that does not exist", obj: podIn(corev1.PodPending, waiting("ImagePullBackOff")),
		want: health.InProgress, reason: "ImagePullBackOff", kstatus: kstatus.InProgressStatus},
	{name: "pod running, not ready", obj: podIn(corev1.PodRunning), want: health.InProgress, reason: "PodRunningNotReady", kstatus: kstatus.InProgressStatus},
	{name: "pod no node can take", obj: podIn(corev1.PodPending, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	}), want: health.InProgress, reason: "Unschedulable", kstatus: kstatus.FailedStatus,
		why: "kstatus calls an unschedulable Pod Failed 15 seconds after its creation, by the wall clock, so the same object changes verdict with time; a node may come (an autoscaler), and a Deployment's progress deadline says when to give up"},
	{name: "pod not yet observed", obj: podIn(""), want: health.InProgress, reason: "PodNotObserved", kstatus: kstatus.InProgressStatus},

	// PersistentVolumeClaim, Service, PodDisruptionBudget
	{name: "claim bound", obj: &corev1.PersistentVolumeClaim{ObjectMeta: meta(1), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
		want: health.Current, reason: "Bound", kstatus: kstatus.CurrentStatus},
	{name: "claim pending", obj: &corev1.PersistentVolumeClaim{ObjectMeta: meta(1), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
		want: health.InProgress, reason: "NotBound", kstatus: kstatus.InProgressStatus},
	{name: "claim lost", obj: &corev1.PersistentVolumeClaim{ObjectMeta: meta(1), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimLost}},
		want: health.Failed, reason: "ClaimLost", kstatus: kstatus.InProgressStatus,
		why: "a Lost claim's volume is gone: no controller brings it back"},
	{name: "cluster IP service", obj: &corev1.Service{ObjectMeta: meta(1), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1"}},
		want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "load balancer with an address", obj: &corev1.Service{ObjectMeta: meta(1),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1"}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}},
		want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "load balancer waiting for its address", obj: &corev1.Service{ObjectMeta: meta(1), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1"}},
		want: health.InProgress, reason: "LoadBalancerPending", kstatus: kstatus.CurrentStatus,
		why: "kstatus waits for the cluster IP, which the API server assigns at creation; a load balancer serves once its controller has published an address"},
	{name: "pod disruption budget computed", obj: &policyv1.PodDisruptionBudget{ObjectMeta: meta(1), Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1}},
		want: health.Current, reason: "Computed", kstatus: kstatus.CurrentStatus},

	// Kinds without a rule: the conventions
	{name: "configmap", obj: &corev1.ConfigMap{ObjectMeta: meta(0)}, want: health.Current, reason: "Current", kstatus: kstatus.CurrentStatus},
	{name: "custom resource ready", obj: custom(2, map[string]any{"observedGeneration": int64(2), "conditions": conds(cond("Ready", "True", 2))}),
		want: health.Current, reason: "Ready", kstatus: kstatus.CurrentStatus},
	{name: "custom resource not ready", obj: custom(2, map[string]any{"observedGeneration": int64(2), "conditions": conds(cond("Ready", "False", 2))}),
		want: health.InProgress, reason: "ReadyFalse", kstatus: kstatus.InProgressStatus},
	{name: "custom resource reconciling", obj: custom(2, map[string]any{"conditions": conds(cond("Reconciling", "True", 0), cond("Ready", "Unknown", 0))}),
		want: health.InProgress, reason: "ReconcilingTrue", kstatus: kstatus.InProgressStatus},
	{name: "custom resource stalled", obj: custom(2, map[string]any{"observedGeneration": int64(2), "conditions": conds(cond("Stalled", "True", 2), cond("Ready", "False", 2))}),
		want: health.Failed, reason: "StalledTrue", kstatus: kstatus.FailedStatus},
	{name: "custom resource whose status describes an older generation", obj: custom(3, map[string]any{"observedGeneration": int64(2), "conditions": conds(cond("Ready", "True", 2))}),
		want: health.InProgress, reason: "LatestGenerationNotObserved", kstatus: kstatus.InProgressStatus},
	{name: "custom resource whose Ready condition describes an older generation", obj: custom(3, map[string]any{"conditions": conds(cond("Ready", "True", 2))}),
		want: health.InProgress, reason: "LatestGenerationNotObserved", kstatus: kstatus.CurrentStatus,
		why: "a condition's observedGeneration says which spec it describes; Ready=True for generation 2 says nothing of generation 3"},
	{name: "custom resource its controller has not reported on", obj: custom(1, nil),
		want: health.InProgress, reason: "NoStatus", kstatus: kstatus.CurrentStatus,
		why: "kstatus calls an object with no status Current; a child just created has not been seen by its controller, and its first status says what it is"},
	{name: "custom resource with a status of no convention", obj: custom(1, map[string]any{"phase": "Running"}),
		want: health.Current, reason: "Current", kstatus: kstatus.CurrentStatus},
	{name: "custom resource definition established", obj: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "dbs.example.com", "generation": int64(1)},
		"status": map[string]any{"conditions": conds(cond("NamesAccepted", "True", 0), cond("Established", "True", 0))}}},
		want: health.Current, reason: "Established", kstatus: kstatus.CurrentStatus},
	{name: "custom resource definition whose names are refused", obj: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "dbs.example.com", "generation": int64(1)},
		"status": map[string]any{"conditions": conds(cond("NamesAccepted", "False", 0), cond("Established", "False", 0))}}},
		want: health.Failed, reason: "NamesAcceptedFalse", kstatus: kstatus.FailedStatus},
}

// TestOfAgreesWithKstatus is the oracle test: for each object, Of says what
// the case wants, kstatus says what the case records, and where the two
// differ the case says why. kstatus's Terminating counts as InProgress (a
// parent waits for a child being replaced).
func TestOfAgreesWithKstatus(t *testing.T) {
	for _, c := range oracleCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := health.Of(c.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != c.want || got.Reason != c.reason {
				t.Errorf("Of = %s, want %s (%s)", got, c.want, c.reason)
			}
			res, err := kstatus.Compute(unstructuredOf(t, c.obj))
			if err != nil {
				t.Fatalf("kstatus: %v", err)
			}
			if res.Status != c.kstatus {
				t.Errorf("kstatus says %s (%s), the case records %s", res.Status, res.Message, c.kstatus)
			}
			agree := fromKstatus(res.Status) == got.Status
			switch {
			case !agree && c.why == "":
				t.Errorf("Of says %s, kstatus %s, and the case does not say why", got.Status, res.Status)
			case agree && c.why != "":
				t.Errorf("Of and kstatus agree (%s), yet the case says why they differ: %s", got.Status, c.why)
			}
		})
	}
}

// TestOfReadsUnstructuredAsTyped: a built-in object read as unstructured
// content (a dynamic client's, a cache of unstructured objects) has the
// same health as the typed one.
func TestOfReadsUnstructuredAsTyped(t *testing.T) {
	for _, c := range oracleCases {
		if _, ok := c.obj.(*unstructured.Unstructured); ok {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			typed, err := health.Of(c.obj)
			if err != nil {
				t.Fatal(err)
			}
			u, err := health.Of(unstructuredOf(t, c.obj))
			if err != nil {
				t.Fatal(err)
			}
			if u != typed {
				t.Errorf("unstructured: %s\ntyped:        %s", u, typed)
			}
		})
	}
}

// fromKstatus maps kstatus's statuses onto ours.
func fromKstatus(s kstatus.Status) health.Status {
	switch s {
	case kstatus.CurrentStatus:
		return health.Current
	case kstatus.FailedStatus:
		return health.Failed
	}
	return health.InProgress
}

// unstructuredOf converts a typed object, its apiVersion and kind set from
// client-go's scheme, as an API server would return it.
func unstructuredOf(t testing.TB, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(gvks[0])
	return u
}
