// Package v1alpha1 contains the Persona, PromptLayer and ClusterPromptLayer API
// of the prompts.persona-operator.dev group.
// +kubebuilder:object:generate=true
// +groupName=prompts.persona-operator.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the persona-operator API.
	GroupVersion = schema.GroupVersion{Group: "prompts.persona-operator.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
