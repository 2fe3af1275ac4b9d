// Package testapi defines Widget, a small custom resource that reconcilekit's
// own tests install into envtest: it has a spec, a status subresource with
// conditions and observedGeneration, and nothing else, so tests exercise the
// library rather than a particular operator.
//
// +kubebuilder:object:generate=true
// +groupName=testing.reconcilekit.io
// +versionName=v1
package testapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of Widget.
var GroupVersion = schema.GroupVersion{Group: "testing.reconcilekit.io", Version: "v1"}

// AddToScheme registers Widget and WidgetList.
var AddToScheme = (&scheme.Builder{GroupVersion: GroupVersion}).Register(&Widget{}, &WidgetList{}).AddToScheme

// WidgetSpec is what a test asks for.
type WidgetSpec struct {
	// Message is free text a test's reconciler acts on.
	// +optional
	Message string `json:"message,omitempty"`
	// Replicas is an optional number, defaulted by the API server to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Labels is a free-form map.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Items is a free-form list (a JSON merge patch replaces it whole).
	// +optional
	Items []string `json:"items,omitempty"`
	// Ports is a list keyed by name: for the API server (+listType=map,
	// so managedFields and server-side apply own each element) and for Go
	// clients (patchMergeKey).
	// +optional
	// +listType=map
	// +listMapKey=name
	Ports []WidgetPort `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// Suspend stops the reconciliation of the Widget while true (package
	// suspend).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// WidgetPort is one element of WidgetSpec.Ports.
type WidgetPort struct {
	// Name keys the element.
	Name string `json:"name"`
	// Port is a number.
	// +optional
	Port int32 `json:"port,omitempty"`
}

// WidgetStatus is what a test's reconciler reports.
type WidgetStatus struct {
	// ObservedGeneration is the metadata.generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is a free-form phase.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions are the standard conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastHandledReconcileAt is the last reconcile request handled (package
	// request).
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// Widget is the test resource.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// GetConditions returns the Widget's conditions.
func (w *Widget) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the Widget's conditions.
func (w *Widget) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (w *Widget) GetObservedGeneration() int64 { return w.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (w *Widget) SetObservedGeneration(g int64) { w.Status.ObservedGeneration = g }

// GetSuspend returns spec.suspend.
func (w *Widget) GetSuspend() bool { return w.Spec.Suspend }

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (w *Widget) GetLastHandledReconcileRequest() string { return w.Status.LastHandledReconcileAt }

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (w *Widget) SetLastHandledReconcileRequest(token string) {
	w.Status.LastHandledReconcileAt = token
}

// WidgetList is a list of Widgets.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}
