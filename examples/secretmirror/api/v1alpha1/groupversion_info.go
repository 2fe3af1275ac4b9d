// Package v1alpha1 holds the SecretMirror API: copy a Secret of one
// namespace into others, and keep the copies in step.
//
// +kubebuilder:object:generate=true
// +groupName=mirror.reconcilekit.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the SecretMirror API.
	GroupVersion = schema.GroupVersion{Group: "mirror.reconcilekit.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the SecretMirror types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the SecretMirror types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
