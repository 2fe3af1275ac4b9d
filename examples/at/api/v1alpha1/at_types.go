package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where an At is in its life.
// +kubebuilder:validation:Enum=PENDING;RUNNING;DONE
type Phase string

// The phases of an At, in order. DONE is final.
const (
	PhasePending Phase = "PENDING"
	PhaseRunning Phase = "RUNNING"
	PhaseDone    Phase = "DONE"
)

// Outcome is how the At's command ended.
// +kubebuilder:validation:Enum=Succeeded;Failed
type Outcome string

// The outcomes of a DONE At.
const (
	OutcomeSucceeded Outcome = "Succeeded"
	OutcomeFailed    Outcome = "Failed"
)

// DefaultImage is the image that runs the command when spec.image is empty.
const DefaultImage = "busybox:1.36"

// MaxCommandLength bounds spec.command; the API server rejects longer ones.
const MaxCommandLength = 4096

// AtSpec says what to run and when.
type AtSpec struct {
	// Schedule is when to run the command, an RFC 3339 time
	// ("2026-11-22T10:00:00Z"). A time in the past runs at once.
	// +required
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`

	// Command is run with /bin/sh -c in the Pod.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`

	// Image runs the command. Default: busybox:1.36.
	// +optional
	// +kubebuilder:default="busybox:1.36"
	Image string `json:"image,omitempty"`

	// Suspend stops the controller from acting on the At while true: a
	// PENDING At whose schedule passes meanwhile starts its Pod when
	// resumed, at once. Deleting a suspended At still deletes its Pod.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// AtStatus is what the controller observed and did.
type AtStatus struct {
	// Phase is PENDING until the schedule, RUNNING while the Pod runs, and
	// DONE once it has finished, for good.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PodName is the Pod that runs (or ran) the command.
	// +optional
	PodName string `json:"podName,omitempty"`

	// Outcome is how the command ended, once DONE.
	// +optional
	Outcome Outcome `json:"outcome,omitempty"`

	// ExitCode is the command's exit code, when the kubelet reported one.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Conditions are Ready, Reconciling and Stalled, kept consistent for
	// kstatus-based tools and `kubectl wait --for=condition=Ready`.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastHandledReconcileAt is the value of the last
	// reconcile.fluxcd.io/requestedAt annotation the controller handled:
	// once it shows a request's value, the conditions beside it are the
	// outcome of a reconcile that ran after the request.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// At runs a command in a Pod at a scheduled time.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ats
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.outcome`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type At struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AtSpec   `json:"spec,omitempty"`
	Status AtStatus `json:"status,omitempty"`
}

// GetConditions returns the At's conditions (for package status).
func (a *At) GetConditions() []metav1.Condition { return a.Status.Conditions }

// SetConditions replaces the At's conditions (for package status).
func (a *At) SetConditions(c []metav1.Condition) { a.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (a *At) GetObservedGeneration() int64 { return a.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (a *At) SetObservedGeneration(g int64) { a.Status.ObservedGeneration = g }

// GetSuspend returns spec.suspend (for package suspend: it suspends the At).
func (a *At) GetSuspend() bool { return a.Spec.Suspend }

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt (for
// package request).
func (a *At) GetLastHandledReconcileRequest() string { return a.Status.LastHandledReconcileAt }

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt (for
// package request).
func (a *At) SetLastHandledReconcileRequest(token string) { a.Status.LastHandledReconcileAt = token }

// AtList is a list of At.
//
// +kubebuilder:object:root=true
type AtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []At `json:"items"`
}

func init() {
	SchemeBuilder.Register(&At{}, &AtList{})
}
