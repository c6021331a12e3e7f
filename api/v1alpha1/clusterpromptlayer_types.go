package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterLayerPosition is where a ClusterPromptLayer goes in the final prompt.
// +kubebuilder:validation:Enum=first;last;final
type ClusterLayerPosition string

// The positions of a ClusterPromptLayer.
const (
	ClusterLayerFirst ClusterLayerPosition = "first"
	ClusterLayerLast  ClusterLayerPosition = "last"
	// ClusterLayerFinal goes after the caller prompts too: it has the last
	// word in every prompt rendered.
	ClusterLayerFinal ClusterLayerPosition = "final"
)

// ClusterPromptLayerSpec is text that every selected Persona's prompt
// carries and no tenant can remove: it is placed after every namespaced
// layer, platform section and inheritance step has acted.
// +kubebuilder:pruning:PreserveUnknownFields
type ClusterPromptLayerSpec struct {
	// Description is free text, at most 1024 bytes.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Position is where the text goes: first, before the prompt; last,
	// after it (the caller's prompts still follow); or final, after the
	// caller's prompts too. ClusterPromptLayers of one position are joined
	// in name order.
	// +kubebuilder:default=last
	// +optional
	Position ClusterLayerPosition `json:"position,omitempty"`

	// Template is the Go template of the text, with the same data as any
	// template. It cannot include PromptLayers: those differ per namespace.
	// A template that renders to nothing adds nothing.
	// +kubebuilder:validation:MaxLength=65536
	Template string `json:"template"`

	// NamespaceSelector selects Personas by the labels of their Namespace;
	// empty or unset selects every namespace. Namespace labels belong to
	// the platform team: this is the selector a tenant cannot escape.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// PersonaSelector selects Personas by their own labels; empty or unset
	// selects every Persona. A tenant can leave it by relabelling a
	// Persona: use it for opt-in text, not for rules.
	// +optional
	PersonaSelector *metav1.LabelSelector `json:"personaSelector,omitempty"`
}

// ClusterPromptLayerStatus is the observed state of a ClusterPromptLayer.
type ClusterPromptLayerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready (the template parses), and Stalled when it does not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterPromptLayer is a guardrail: cluster-wide text placed into the
// prompt of every Persona both selectors match, which nothing a tenant
// writes can remove or reorder.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=prompts,shortName=cpl
// +kubebuilder:printcolumn:name="Position",type=string,JSONPath=`.spec.position`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPromptLayer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterPromptLayerSpec `json:"spec"`
	// Status reads {observedGeneration: -1} until the controller first
	// writes it, so that kstatus and Argo CD read a new object as in
	// progress rather than current (the API server applies the default to
	// objects it reads, and keeps no status from a create).
	// +optional
	// +kubebuilder:default={observedGeneration:-1}
	Status ClusterPromptLayerStatus `json:"status,omitempty"`
}

// ClusterPromptLayerList is a list of ClusterPromptLayers.
// +kubebuilder:object:root=true
type ClusterPromptLayerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPromptLayer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterPromptLayer{}, &ClusterPromptLayerList{})
}
