package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebsiteSpec is what a Website should be.
type WebsiteSpec struct {
	// Hostname is the name the site is published under: a record in the
	// DNS directory points it at the site. The controller, not the schema,
	// checks that it is a DNS name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Hostname string `json:"hostname"`

	// Image serves the site.
	// +optional
	// +kubebuilder:default="nginx:1.27"
	Image string `json:"image,omitempty"`

	// Replicas is how many Pods serve the site.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
}

// WebsiteStatus is what the controller observed.
type WebsiteStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Reconciling and Stalled (kstatus).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Website is a web site served by a Deployment of its own and published
// under a hostname.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebsiteSpec   `json:"spec,omitempty"`
	Status WebsiteStatus `json:"status,omitempty"`
}

// GetConditions returns the Website's status conditions.
func (w *Website) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the Website's status conditions.
func (w *Website) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (w *Website) GetObservedGeneration() int64 { return w.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (w *Website) SetObservedGeneration(g int64) { w.Status.ObservedGeneration = g }

// WebsiteList is a list of Websites.
//
// +kubebuilder:object:root=true
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Website{}, &WebsiteList{})
}
