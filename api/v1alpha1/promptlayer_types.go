package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LayerMode is how a layer's text combines with the prompt composed so far.
// +kubebuilder:validation:Enum=append;prepend;replace;disable
type LayerMode string

// The layer modes.
const (
	LayerModeAppend  LayerMode = "append"
	LayerModePrepend LayerMode = "prepend"
	LayerModeReplace LayerMode = "replace"
	LayerModeDisable LayerMode = "disable"
)

// PromptLayerSpec is a reusable prompt contribution.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!(has(self.template) && has(self.templateFrom))",message="set at most one of template and templateFrom"
// +kubebuilder:validation:XValidation:rule="has(self.template) || has(self.templateFrom) || (has(self.mode) && self.mode == 'disable')",message="set exactly one of template and templateFrom (only a disable layer may have neither)"
type PromptLayerSpec struct {
	// Description is free text.
	// +optional
	Description string `json:"description,omitempty"`

	// Source ranks the layer: user (0), package (1), a custom source name
	// (1.5, relative order kept), app (2), run (3). Layers are applied in rank order.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	// +kubebuilder:default=package
	// +optional
	Source string `json:"source,omitempty"`

	// Mode is how the layer's text combines with the prompt so far: append
	// adds it after, prepend before, replace makes it the whole text, disable
	// empties the text.
	// +kubebuilder:default=append
	// +optional
	Mode LayerMode `json:"mode,omitempty"`

	// Template is the layer's Go template.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Template *string `json:"template,omitempty"`

	// TemplateFrom reads the template text from a ConfigMap key in the same namespace.
	// +optional
	TemplateFrom *TemplateSource `json:"templateFrom,omitempty"`
}

// TemplateSource is where a layer's template text comes from.
// +kubebuilder:pruning:PreserveUnknownFields
type TemplateSource struct {
	// ConfigMapKeyRef selects a key of a ConfigMap in the layer's namespace.
	ConfigMapKeyRef ConfigMapKeyReference `json:"configMapKeyRef"`
}

// ConfigMapKeyReference selects a key of a ConfigMap in the same namespace.
// +kubebuilder:pruning:PreserveUnknownFields
type ConfigMapKeyReference struct {
	// Name is the ConfigMap's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key is the key in the ConfigMap's data.
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PromptLayerStatus is the observed state of a PromptLayer.
type PromptLayerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready: the template parses and templateFrom resolves.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PromptLayer is a reusable prompt contribution. It does nothing until a
// Persona lists it in spec.layers or a template names it in include.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=prompts
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PromptLayer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PromptLayerSpec `json:"spec,omitempty"`
	// Status reads {observedGeneration: -1} until the controller first
	// writes it, so that kstatus and Argo CD read a new object as in
	// progress rather than current (the API server applies the default to
	// objects it reads, and keeps no status from a create).
	// +optional
	// +kubebuilder:default={observedGeneration:-1}
	Status PromptLayerStatus `json:"status,omitempty"`
}

// PromptLayerList is a list of PromptLayers.
// +kubebuilder:object:root=true
type PromptLayerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromptLayer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromptLayer{}, &PromptLayerList{})
}
