package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromptPlatformName is the one name a PromptPlatform may have: there is at
// most one per cluster, and every Persona renders on top of it.
const PromptPlatformName = "default"

// PromptPlatformSpec says what the cluster's platform is: it replaces or
// removes the shipped platform sections for every Persona, before
// inheritance. Tenants can still override any section, so text no tenant
// may remove belongs in a ClusterPromptLayer instead.
// +kubebuilder:pruning:PreserveUnknownFields
type PromptPlatformSpec struct {
	// Description is free text, at most 1024 bytes.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Sections replaces or removes platform sections by key, as a Persona's
	// systemPrompt.platform does: replace supplies the section's template,
	// remove: true drops it. Unset keys keep the shipped default.
	// Keys: persona, workspace, gitPush, branchCreated, commitSigning,
	// ghGateway, gitWrapper, forkPr, prDashboardLink, prMergeability, waiver,
	// structuredOutput, opencodeStructuredOutput, knowledge, eventDelivery,
	// completion, expectedOutput, tasks, autonomousTurn.
	// Any other key is refused at admission, with the key that was meant.
	// +kubebuilder:validation:MaxProperties=19
	// +optional
	Sections map[string]PlatformOverride `json:"sections,omitempty"`

	// HarnessPrompt is the cluster's rule on the Personas' harnessPrompt.
	// +optional
	HarnessPrompt *HarnessPromptPolicy `json:"harnessPrompt,omitempty"`
}

// HarnessPromptPolicy says which values of harnessPrompt the Personas of
// the cluster may use.
// +kubebuilder:pruning:PreserveUnknownFields
type HarnessPromptPolicy struct {
	// AllowReplace false forbids harnessPrompt: replace, a Persona's own,
	// inherited or a variant's: such a Persona does not render
	// (HarnessPromptForbidden). Unset or true allows it.
	// +optional
	AllowReplace *bool `json:"allowReplace,omitempty"`
}

// ReplaceAllowed reports whether Personas may use harnessPrompt: replace.
func (s *PromptPlatformSpec) ReplaceAllowed() bool {
	return s.HarnessPrompt == nil || s.HarnessPrompt.AllowReplace == nil || *s.HarnessPrompt.AllowReplace
}

// PromptPlatformStatus is the observed state of a PromptPlatform.
type PromptPlatformStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready (every section template parses), and Stalled
	// when one does not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PromptPlatform is the cluster's own platform sections: the one named
// default replaces the sections shipped in the operator for every Persona.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=prompts,shortName=ppf
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'default'",message="metadata.name must be default: a cluster has at most one PromptPlatform, and every Persona renders on the one named default"
type PromptPlatform struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PromptPlatformSpec `json:"spec,omitempty"`
	// Status reads {observedGeneration: -1} until the controller first
	// writes it, so that kstatus and Argo CD read a new object as in
	// progress rather than current (the API server applies the default to
	// objects it reads, and keeps no status from a create).
	// +optional
	// +kubebuilder:default={observedGeneration:-1}
	Status PromptPlatformStatus `json:"status,omitempty"`
}

// PromptPlatformList is a list of PromptPlatforms.
// +kubebuilder:object:root=true
type PromptPlatformList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromptPlatform `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromptPlatform{}, &PromptPlatformList{})
}
