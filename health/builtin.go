package health

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The rules of the built-in kinds follow kstatus's (cli-utils
// pkg/kstatus/status, core.go), with the differences the package
// documentation lists; each differs on purpose, and the oracle tests
// (oracle_test.go) hold both to it.

// builtin is a built-in kind with a rule of its own: one row of builtins,
// the one list of them.
type builtin struct {
	// typ is the kind's Go type in k8s.io/api, whose objects of says the
	// health of; nil for a kind read through the conventions' view.
	typ reflect.Type
	of  func(client.Object) Health
	// view says the health from the conventions' view, after the rules
	// every kind shares (deletion, observedGeneration, Reconciling and
	// Stalled); nil for a kind with a Go type.
	view func(view) Health
	// goPackage is the import path (up to the version) of the kind's Go
	// types when client-go's scheme does not know them, for a typed object
	// without its TypeMeta; "" otherwise.
	goPackage string
}

// rule is the row of a kind whose typed objects of says the health of.
func rule[T any, P interface {
	*T
	client.Object
}](of func(P) Health) builtin {
	return builtin{typ: reflect.TypeFor[T](), of: func(o client.Object) Health { return of(o.(P)) }}
}

// builtins are the built-in kinds with a rule of their own, by group and
// kind, whatever their version.
var builtins = map[schema.GroupKind]builtin{
	{Group: "apps", Kind: "Deployment"}:            rule(deployment),
	{Group: "apps", Kind: "StatefulSet"}:           rule(statefulSet),
	{Group: "apps", Kind: "DaemonSet"}:             rule(daemonSet),
	{Group: "apps", Kind: "ReplicaSet"}:            rule(replicaSet),
	{Group: "batch", Kind: "Job"}:                  rule(job),
	{Kind: "Pod"}:                                  rule(pod),
	{Kind: "PersistentVolumeClaim"}:                rule(claim),
	{Kind: "Service"}:                              rule(service),
	{Group: "policy", Kind: "PodDisruptionBudget"}: rule(budget),
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: {
		view: definition, goPackage: "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/"},
}

// kindOfType is the kind of each Go type of builtins.
var kindOfType = func() map[reflect.Type]schema.GroupKind {
	m := map[reflect.Type]schema.GroupKind{}
	for gk, b := range builtins {
		if b.typ != nil {
			m[b.typ] = gk
		}
	}
	return m
}()

// typed says the health of a typed object of a built-in kind with a rule
// of its own; ok is false for any other object.
func typed(obj client.Object) (h Health, ok bool) {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer {
		return Health{}, false
	}
	gk, ok := kindOfType[t.Elem()]
	if !ok {
		return Health{}, false
	}
	h = builtins[gk].of(obj)
	h.Kind, h.Namespace, h.Name = gk.Kind, obj.GetNamespace(), obj.GetName()
	return h, true
}

// typedFor returns an empty typed object for unstructured content of a
// built-in kind with a rule of its own, whatever its version.
func typedFor(gvk schema.GroupVersionKind) (client.Object, bool) {
	b, ok := builtins[gvk.GroupKind()]
	if !ok || b.typ == nil {
		return nil, false
	}
	return reflect.New(b.typ).Interface().(client.Object), true
}

func current(reason, message string) Health {
	return Health{Status: Current, Reason: reason, Message: message}
}

func inProgress(reason, message string) Health {
	return Health{Status: InProgress, Reason: reason, Message: message}
}

func failed(reason, message string) Health {
	return Health{Status: Failed, Reason: reason, Message: message}
}

// Reasons of the rules every kind shares.
const (
	reasonTerminating = "Terminating"
	// kstatus's reason for a status older than the spec.
	reasonNotObserved = "LatestGenerationNotObserved"
)

func terminating() Health { return inProgress(reasonTerminating, "being deleted") }

func notObserved(generation, observed int64) Health {
	if observed == 0 {
		return inProgress(reasonNotObserved, fmt.Sprintf("generation %d not yet observed by its controller", generation))
	}
	return inProgress(reasonNotObserved, fmt.Sprintf("generation %d not yet observed by its controller (its status describes generation %d)", generation, observed))
}

// begin applies the rules every kind shares: an object being deleted is
// InProgress, and so is one whose status.observedGeneration is not its
// metadata.generation. always says that the kind's controller always
// records observedGeneration, so that a missing one (zero) means "not
// observed yet"; otherwise a missing one is no information, as in kstatus.
func begin(obj metav1.Object, observed int64, always bool) (Health, bool) {
	if obj.GetDeletionTimestamp() != nil {
		return terminating(), true
	}
	if gen := obj.GetGeneration(); (always || observed != 0) && observed != gen {
		return notObserved(gen, observed), true
	}
	return Health{}, false
}

// replicas is spec.replicas, 1 when unset, as the controllers default it.
func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func deployment(d *appsv1.Deployment) Health {
	if h, done := begin(d, d.Status.ObservedGeneration, true); done {
		return h
	}
	// Without a progress deadline the controller sets no Progressing
	// condition (math.MaxInt32 is its "none").
	progressing := d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds == math.MaxInt32
	available := false
	var replicaFailure *appsv1.DeploymentCondition
	for i, c := range d.Status.Conditions {
		switch c.Type {
		case appsv1.DeploymentProgressing:
			if c.Reason == "ProgressDeadlineExceeded" {
				return failed(c.Reason, orDefault(c.Message, "progress deadline exceeded"))
			}
			if c.Status == corev1.ConditionTrue && c.Reason == "NewReplicaSetAvailable" {
				progressing = true
			}
		case appsv1.DeploymentAvailable:
			available = available || c.Status == corev1.ConditionTrue
		case appsv1.DeploymentReplicaFailure:
			if c.Status == corev1.ConditionTrue {
				replicaFailure = &d.Status.Conditions[i]
			}
		}
	}
	spec, s := replicas(d.Spec.Replicas), d.Status
	var h Health
	switch {
	case spec > s.Replicas:
		h = inProgress("LessReplicas", fmt.Sprintf("waiting for %d replicas to be created", spec))
	case spec > s.UpdatedReplicas:
		h = inProgress("LessUpdated", fmt.Sprintf("waiting for %d replicas to be updated", spec))
	case s.Replicas > spec:
		h = inProgress("ExtraPods", "waiting for old replicas to terminate")
	case s.UpdatedReplicas > s.AvailableReplicas:
		h = inProgress("LessAvailable", "waiting for the updated replicas to be available")
	case spec > s.ReadyReplicas:
		h = inProgress("LessReady", fmt.Sprintf("waiting for %d replicas to be ready", spec))
	case !progressing:
		h = inProgress("ReplicaSetNotAvailable", "waiting for the new ReplicaSet to be available")
	case !available:
		h = inProgress("DeploymentNotAvailable", "waiting for minimum availability")
	default:
		return current("Available", fmt.Sprintf("%d replicas available", spec))
	}
	if replicaFailure != nil {
		// Pods cannot be created (a quota, an admission webhook): say why.
		h = inProgress(orDefault(replicaFailure.Reason, "ReplicaFailure"), orDefault(replicaFailure.Message, h.Message))
	}
	return h
}

func statefulSet(st *appsv1.StatefulSet) Health {
	if h, done := begin(st, st.Status.ObservedGeneration, true); done {
		return h
	}
	if st.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return current("OnDelete", "updated by deleting its Pods (OnDelete update strategy)")
	}
	spec, s := replicas(st.Spec.Replicas), st.Status
	partition := int32(-1)
	if ru := st.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	switch {
	case spec > s.Replicas:
		return inProgress("LessReplicas", fmt.Sprintf("waiting for %d replicas to be created", spec))
	case spec > s.ReadyReplicas:
		return inProgress("LessReady", fmt.Sprintf("waiting for %d replicas to be ready", spec))
	case s.Replicas > spec:
		return inProgress("ExtraPods", "waiting for extra replicas to terminate")
	case partition != -1 && s.UpdatedReplicas < spec-partition:
		return inProgress("PartitionRollout", fmt.Sprintf("waiting for %d replicas above the partition to be updated", spec-partition))
	case partition != -1:
		return current("PartitionRolledOut", "replicas above the partition updated")
	case spec > s.CurrentReplicas:
		return inProgress("LessCurrent", fmt.Sprintf("waiting for %d replicas at the current revision", spec))
	case s.CurrentRevision != s.UpdateRevision:
		return inProgress("RevisionMismatch", "waiting for the update revision to become current")
	}
	return current("Ready", fmt.Sprintf("%d replicas ready", spec))
}

func daemonSet(ds *appsv1.DaemonSet) Health {
	if h, done := begin(ds, ds.Status.ObservedGeneration, true); done {
		return h
	}
	s := ds.Status
	if ds.Generation == 0 || s.ObservedGeneration == 0 {
		// kstatus: the controller records both once it has acted.
		return notObserved(ds.Generation, s.ObservedGeneration)
	}
	want := s.DesiredNumberScheduled
	switch {
	case want > s.CurrentNumberScheduled:
		return inProgress("LessCurrent", fmt.Sprintf("waiting for %d Pods to be scheduled", want))
	case want > s.UpdatedNumberScheduled:
		return inProgress("LessUpdated", fmt.Sprintf("waiting for %d Pods to be updated", want))
	case want > s.NumberAvailable:
		return inProgress("LessAvailable", fmt.Sprintf("waiting for %d Pods to be available", want))
	case want > s.NumberReady:
		return inProgress("LessReady", fmt.Sprintf("waiting for %d Pods to be ready", want))
	}
	return current("Ready", fmt.Sprintf("%d Pods ready", want))
}

func replicaSet(rs *appsv1.ReplicaSet) Health {
	if h, done := begin(rs, rs.Status.ObservedGeneration, true); done {
		return h
	}
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return inProgress(orDefault(c.Reason, "ReplicaFailure"), orDefault(c.Message, "Pods cannot be created"))
		}
	}
	spec, s := replicas(rs.Spec.Replicas), rs.Status
	switch {
	case spec > s.FullyLabeledReplicas:
		return inProgress("LessLabelled", fmt.Sprintf("waiting for %d replicas to be labelled", spec))
	case spec > s.AvailableReplicas:
		return inProgress("LessAvailable", fmt.Sprintf("waiting for %d replicas to be available", spec))
	case spec > s.ReadyReplicas:
		return inProgress("LessReady", fmt.Sprintf("waiting for %d replicas to be ready", spec))
	case s.Replicas > spec:
		return inProgress("ExtraPods", "waiting for extra replicas to terminate")
	}
	return current("Available", fmt.Sprintf("%d replicas available", spec))
}

// job: Current once Complete, Failed once Failed (or FailureTarget, its
// announcement), InProgress while it runs. kstatus calls a running Job
// Current; a parent that creates a Job waits for its work.
func job(j *batchv1.Job) Health {
	if h, done := begin(j, 0, false); done {
		return h
	}
	var complete, criteriaMet, suspended bool
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			return failed(orDefault(c.Reason, "JobFailed"), orDefault(c.Message, "failed"))
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobSuccessCriteriaMet:
			criteriaMet = true
		case batchv1.JobSuspended:
			suspended = true
		}
	}
	switch {
	case complete:
		return current("Complete", "completed")
	case criteriaMet:
		return inProgress("SuccessCriteriaMet", "succeeded, waiting for its Pods to finish")
	case suspended:
		return inProgress("Suspended", "suspended")
	case j.Status.StartTime == nil:
		return inProgress("JobNotStarted", "waiting for the Job to start")
	}
	return inProgress("JobRunning", "running")
}

// Reasons of a waiting container that say something is wrong; the others
// (ContainerCreating, PodInitializing) are a Pod's normal start.
var troubled = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true,
	"RunContainerError": true,
}

// pod: a Failed Pod is Failed (kstatus: Current, "completed, but not
// successfully"); an unschedulable one is InProgress (kstatus: Failed 15
// seconds after its creation, by the wall clock).
func pod(p *corev1.Pod) Health {
	if h, done := begin(p, p.Status.ObservedGeneration, false); done {
		return h
	}
	s := p.Status
	switch s.Phase {
	case corev1.PodSucceeded:
		return current("Succeeded", "completed")
	case corev1.PodFailed:
		return failed(orDefault(s.Reason, "PodFailed"), orDefault(s.Message, terminated(s.ContainerStatuses)))
	case corev1.PodRunning:
		if podCondition(s.Conditions, corev1.PodReady) {
			return current("Ready", "ready")
		}
		var looping []string
		for _, c := range s.ContainerStatuses {
			if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
				looping = append(looping, c.Name)
			}
		}
		if len(looping) > 0 {
			return failed("ContainerCrashLooping", "containers in CrashLoopBackOff: "+strings.Join(looping, ","))
		}
		return inProgress("PodRunningNotReady", "running, not ready")
	case corev1.PodPending:
		for _, c := range s.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return inProgress(c.Reason, orDefault(c.Message, "cannot be scheduled"))
			}
		}
		for _, c := range append(s.InitContainerStatuses[:len(s.InitContainerStatuses):len(s.InitContainerStatuses)], s.ContainerStatuses...) {
			if w := c.State.Waiting; w != nil && troubled[w.Reason] {
				return inProgress(w.Reason, fmt.Sprintf("container %q: %s", c.Name, orDefault(w.Message, w.Reason)))
			}
		}
		return inProgress("PodPending", "pending")
	case "":
		return inProgress("PodNotObserved", "no phase yet")
	}
	return inProgress("PodPhase"+conditionReason(string(s.Phase)), "phase "+string(s.Phase))
}

// terminated says why a failed Pod's containers stopped.
func terminated(cs []corev1.ContainerStatus) string {
	var parts []string
	for _, c := range cs {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			parts = append(parts, fmt.Sprintf("container %q: %s, exit code %d", c.Name, orDefault(t.Reason, "Error"), t.ExitCode))
		}
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, "; ")
}

func podCondition(cs []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// claim: Bound is Current, Lost (its volume is gone) is Failed; kstatus
// calls Lost InProgress.
func claim(c *corev1.PersistentVolumeClaim) Health {
	if h, done := begin(c, 0, false); done {
		return h
	}
	switch c.Status.Phase {
	case corev1.ClaimBound:
		return current("Bound", "bound")
	case corev1.ClaimLost:
		return failed("ClaimLost", "its PersistentVolume is gone")
	}
	return inProgress("NotBound", "waiting to be bound")
}

// service: a LoadBalancer is Current once it has an address (kstatus: once
// it has a cluster IP, which the API server assigns at creation).
func service(svc *corev1.Service) Health {
	if h, done := begin(svc, 0, false); done {
		return h
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		return inProgress("LoadBalancerPending", "waiting for a load balancer address")
	}
	return current("Ready", "ready")
}

func budget(b *policyv1.PodDisruptionBudget) Health {
	if h, done := begin(b, b.Status.ObservedGeneration, false); done {
		return h
	}
	return current("Computed", "allowed disruptions computed")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
