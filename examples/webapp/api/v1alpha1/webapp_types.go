package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebAppSpec is what a WebApp should be.
type WebAppSpec struct {
	// Image serves the application.
	// +optional
	// +kubebuilder:default="nginx:1.27"
	Image string `json:"image,omitempty"`

	// Replicas is how many Pods serve it.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Port is the port the application listens on, and the Service's.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Config is the application's configuration: a ConfigMap mounted at
	// /etc/webapp. A change rolls the Pods.
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// DisruptionBudget, when set, keeps MinAvailable Pods through
	// voluntary disruptions (a PodDisruptionBudget); removing it deletes
	// the budget.
	// +optional
	DisruptionBudget *DisruptionBudget `json:"disruptionBudget,omitempty"`

	// Monitoring, when set, has Prometheus scrape the application (a
	// ServiceMonitor of the Prometheus operator). The WebApp waits,
	// Reconciling, while the ServiceMonitor kind is not installed.
	// +optional
	Monitoring *Monitoring `json:"monitoring,omitempty"`
}

// DisruptionBudget is the WebApp's PodDisruptionBudget.
type DisruptionBudget struct {
	// MinAvailable is how many Pods must stay available.
	// +kubebuilder:validation:Minimum=0
	MinAvailable int32 `json:"minAvailable"`
}

// Monitoring is the WebApp's ServiceMonitor.
type Monitoring struct {
	// Interval is how often Prometheus scrapes.
	// +optional
	// +kubebuilder:default="30s"
	Interval string `json:"interval,omitempty"`
}

// WebAppStatus is what the controller observed.
type WebAppStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Reconciling and Stalled (kstatus).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebApp is a web application: a Deployment of its own, its
// configuration, a Service, and what its spec turns on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebAppSpec   `json:"spec,omitempty"`
	Status WebAppStatus `json:"status,omitempty"`
}

// GetConditions returns the WebApp's status conditions.
func (w *WebApp) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the WebApp's status conditions.
func (w *WebApp) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (w *WebApp) GetObservedGeneration() int64 { return w.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (w *WebApp) SetObservedGeneration(g int64) { w.Status.ObservedGeneration = g }

// WebAppList is a list of WebApps.
//
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WebApp{}, &WebAppList{})
}
