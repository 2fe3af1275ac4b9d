// Package v1alpha1 holds the WebApp API: a web application served by a
// Deployment, its configuration, a Service, and optionally a
// PodDisruptionBudget and a ServiceMonitor.
//
// +kubebuilder:object:generate=true
// +groupName=webapp.reconcilekit.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the WebApp API.
	GroupVersion = schema.GroupVersion{Group: "webapp.reconcilekit.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the WebApp types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the WebApp types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
