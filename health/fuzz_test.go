package health_test

import (
	"encoding/json"
	"math"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/health"
)

// bits hands out small numbers from a fuzz input.
type bits struct{ v uint64 }

// next returns a number below n.
func (b *bits) next(n uint64) uint64 {
	x := b.v % n
	b.v /= n
	return x
}

func (b *bits) flag() bool { return b.next(2) == 1 }

// fuzzObject builds an object of one of the kinds health has rules for, or
// of the conventions, with generation, observedGeneration, counts and
// conditions drawn from seed: realistic shapes (the conditions each
// controller sets), in every combination.
func fuzzObject(kind uint8, seed uint64) client.Object {
	b := &bits{seed}
	gen := int64(b.next(3) + 1)
	og := []int64{0, gen - 1, gen, gen + 1}[b.next(4)]
	m := metav1.ObjectMeta{Namespace: "ns", Name: "x", Generation: gen, UID: "u"}
	if b.next(8) == 0 {
		m.DeletionTimestamp = &now
	}
	n := func() int32 { return int32(b.next(4)) }
	spec := func() *int32 {
		if b.flag() {
			return nil
		}
		return ptr.To(n())
	}
	switch kind % 11 {
	case 0:
		d := &appsv1.Deployment{ObjectMeta: m}
		d.Spec.Replicas = spec()
		d.Spec.ProgressDeadlineSeconds = []*int32{nil, ptr.To[int32](600), ptr.To[int32](math.MaxInt32)}[b.next(3)]
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: og, Replicas: n(), UpdatedReplicas: n(), ReadyReplicas: n(), AvailableReplicas: n()}
		switch b.next(4) {
		case 1:
			d.Status.Conditions = append(d.Status.Conditions, progressed)
		case 2:
			d.Status.Conditions = append(d.Status.Conditions, progressing)
		case 3:
			d.Status.Conditions = append(d.Status.Conditions, deadline)
		}
		if b.flag() {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}[b.next(2)]})
		}
		if b.next(4) == 0 {
			d.Status.Conditions = append(d.Status.Conditions, replicaFailure)
		}
		return d
	case 1:
		s := &appsv1.StatefulSet{ObjectMeta: m}
		s.Spec.Replicas = spec()
		switch b.next(4) {
		case 1:
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		case 2:
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(n())}}
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: og, Replicas: n(), ReadyReplicas: n(), CurrentReplicas: n(), UpdatedReplicas: n(),
			CurrentRevision: "r1", UpdateRevision: []string{"r1", "r2"}[b.next(2)]}
		return s
	case 2:
		return &appsv1.DaemonSet{ObjectMeta: m, Status: appsv1.DaemonSetStatus{ObservedGeneration: og, DesiredNumberScheduled: n(),
			CurrentNumberScheduled: n(), UpdatedNumberScheduled: n(), NumberAvailable: n(), NumberReady: n()}}
	case 3:
		rs := &appsv1.ReplicaSet{ObjectMeta: m}
		rs.Spec.Replicas = spec()
		rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: og, Replicas: n(), FullyLabeledReplicas: n(), ReadyReplicas: n(), AvailableReplicas: n()}
		if b.next(4) == 0 {
			rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
		}
		return rs
	case 4:
		// A Job's conditions as its controller sets them: at most one
		// outcome, announced by its target condition.
		var cs []batchv1.JobConditionType
		switch b.next(5) {
		case 1:
			cs = []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet}
		case 2:
			cs = []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}
		case 3:
			cs = []batchv1.JobConditionType{batchv1.JobFailureTarget}
		case 4:
			cs = []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed}
		}
		if b.next(4) == 0 {
			cs = append(cs, batchv1.JobSuspended)
		}
		j := jobWith(b.flag(), cs...)
		j.ObjectMeta = m
		return j
	case 5:
		p := &corev1.Pod{ObjectMeta: m}
		p.Status.ObservedGeneration = []int64{0, og}[b.next(2)]
		p.Status.Phase = []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}[b.next(5)]
		if b.flag() {
			ready(p)
		}
		switch b.next(4) {
		case 1:
			waiting("CrashLoopBackOff")(p)
		case 2:
			waiting("ImagePullBackOff")(p)
		case 3:
			waiting("ContainerCreating")(p)
		}
		if b.next(4) == 0 {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable})
		}
		return p
	case 6:
		return &corev1.PersistentVolumeClaim{ObjectMeta: m, Status: corev1.PersistentVolumeClaimStatus{
			Phase: []corev1.PersistentVolumeClaimPhase{"", corev1.ClaimPending, corev1.ClaimBound, corev1.ClaimLost}[b.next(4)]}}
	case 7:
		s := &corev1.Service{ObjectMeta: m}
		s.Spec.Type = []corev1.ServiceType{"", corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}[b.next(4)]
		s.Spec.ClusterIP = []string{"", "10.0.0.1"}[b.next(2)]
		if b.flag() {
			s.Status.LoadBalancer.Ingress = ingress
		}
		return s
	case 8:
		return &policyv1.PodDisruptionBudget{ObjectMeta: m, Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: og}}
	case 9:
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	// A custom resource: no status, an empty one, or observedGeneration
	// and conventional conditions.
	u := custom(gen, nil)
	if m.DeletionTimestamp != nil {
		u.SetDeletionTimestamp(m.DeletionTimestamp)
	}
	switch b.next(3) {
	case 1:
		u.Object["status"] = map[string]any{}
	case 2:
		st := map[string]any{}
		if b.flag() {
			st["observedGeneration"] = og
		}
		var cs []any
		for _, typ := range []string{"Reconciling", "Stalled", "Ready"} {
			if s := b.next(4); s > 0 {
				cs = append(cs, cond(typ, []string{"True", "False", "Unknown"}[s-1], []int64{0, gen - 1, gen}[b.next(3)]))
			}
		}
		if cs != nil {
			st["conditions"] = cs
		}
		u.Object["status"] = st
	}
	return u
}

// explained reports whether Of's verdict ours differs from kstatus's
// theirs on obj for one of the reasons the package documents (the why of
// the oracle cases).
func explained(obj client.Object, ours health.Health, theirs health.Status) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Status.ObservedGeneration == 0 && ours.Reason == "LatestGenerationNotObserved"
	case *appsv1.StatefulSet:
		return o.Status.ObservedGeneration == 0 && ours.Reason == "LatestGenerationNotObserved"
	case *appsv1.ReplicaSet:
		return o.Status.ObservedGeneration == 0 && ours.Reason == "LatestGenerationNotObserved"
	case *batchv1.Job:
		// A running (or suspended, or succeeding) Job is InProgress, a
		// Job whose failure is decided is Failed.
		return ours.Status == health.InProgress && theirs == health.Current ||
			ours.Status == health.Failed && ours.Reason == "BackoffLimitExceeded"
	case *corev1.Pod:
		return o.Status.Phase == corev1.PodFailed && ours.Status == health.Failed ||
			ours.Reason == corev1.PodReasonUnschedulable
	case *corev1.PersistentVolumeClaim:
		return o.Status.Phase == corev1.ClaimLost
	case *corev1.Service:
		return o.Spec.Type == corev1.ServiceTypeLoadBalancer
	case *unstructured.Unstructured:
		return ours.Reason == "NoStatus" ||
			ours.Reason == "LatestGenerationNotObserved" && theirs != health.InProgress
	}
	return false
}

// FuzzOfAgreesWithKstatus builds objects of every kind with rules, and
// custom resources, with statuses in every combination, and checks that Of
// agrees with kstatus except where the package documents why not; that
// the unstructured form of a built-in object has the typed form's health;
// and that Of never fails or panics on them.
func FuzzOfAgreesWithKstatus(f *testing.F) {
	for kind := range uint8(11) {
		for _, seed := range []uint64{0, 1, 7, 12345, 1 << 20, math.MaxUint64 / 3} {
			f.Add(kind, seed)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, seed uint64) {
		obj := fuzzObject(kind, seed)
		ours, err := health.Of(obj)
		if err != nil {
			t.Fatalf("Of: %v", err)
		}
		u := unstructuredOf(t, obj)
		res, err := kstatus.Compute(u)
		if err != nil {
			return // kstatus refuses it (an unknown Pod phase); nothing to compare
		}
		if theirs := fromKstatus(res.Status); theirs != ours.Status && !explained(obj, ours, theirs) {
			data, _ := json.Marshal(u.Object)
			t.Errorf("Of says %s, kstatus %s (%s), for a reason the package does not document:\n%s", ours, res.Status, res.Message, data)
		}
		if _, isU := obj.(*unstructured.Unstructured); !isU {
			fromU, err := health.Of(u)
			if err != nil {
				t.Fatalf("Of(unstructured): %v", err)
			}
			if fromU != ours {
				t.Errorf("unstructured: %s\ntyped:        %s", fromU, ours)
			}
		}
	})
}
