package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretMirrorSpec names the Secret to copy and where.
type SecretMirrorSpec struct {
	// Source is the name of the Secret to copy, in the SecretMirror's own
	// namespace. It need not exist yet: the mirror waits for it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Source string `json:"source"`

	// TargetNamespaces are the namespaces that get a copy, under the
	// source's name. A Secret of that name that somebody else made there
	// is left alone, and the mirror says so.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	TargetNamespaces []string `json:"targetNamespaces"`
}

// SecretMirrorStatus is what the controller observed and did.
type SecretMirrorStatus struct {
	// ObservedGeneration is the metadata.generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Copies are the namespaces that hold a copy of the source, sorted.
	// +optional
	// +listType=set
	Copies []string `json:"copies,omitempty"`

	// Conditions are Ready, Reconciling and Stalled, as kstatus reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SecretMirror copies a Secret into other namespaces.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=".spec.source"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].reason"
type SecretMirror struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecretMirrorSpec   `json:"spec,omitempty"`
	Status SecretMirrorStatus `json:"status,omitempty"`
}

// GetConditions returns the SecretMirror's conditions.
func (m *SecretMirror) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces the SecretMirror's conditions.
func (m *SecretMirror) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (m *SecretMirror) GetObservedGeneration() int64 { return m.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (m *SecretMirror) SetObservedGeneration(g int64) { m.Status.ObservedGeneration = g }

// SecretMirrorList is a list of SecretMirrors.
//
// +kubebuilder:object:root=true
type SecretMirrorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecretMirror `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SecretMirror{}, &SecretMirrorList{})
}
