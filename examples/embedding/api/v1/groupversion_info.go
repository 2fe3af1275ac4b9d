// Package v1 holds the Website API of the embedding guide
// (docs/embedding.md): a web site served by a Deployment and published
// under a hostname in a DNS directory. Every step of the guide reconciles
// these same types.
//
// +kubebuilder:object:generate=true
// +groupName=embedding.reconcilekit.dev
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Website API.
	GroupVersion = schema.GroupVersion{Group: "embedding.reconcilekit.dev", Version: "v1"}

	// SchemeBuilder registers the Website types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Website types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
