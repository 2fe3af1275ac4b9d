// Package v1alpha1 holds the At API: run a command in a Pod at a scheduled
// time.
//
// +kubebuilder:object:generate=true
// +groupName=cnat.reconcilekit.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the At API.
	GroupVersion = schema.GroupVersion{Group: "cnat.reconcilekit.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the At types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the At types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
