package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Harness is the agent harness a prompt is rendered for.
// +kubebuilder:validation:Enum=claude;codex;opencode
type Harness string

// The harnesses a persona can render for.
const (
	HarnessClaude   Harness = "claude"
	HarnessCodex    Harness = "codex"
	HarnessOpencode Harness = "opencode"
)

// HarnessPrompt is how a launcher gives the harness its prompt: keep the
// harness's built-in instructions and add the prompt after them, or replace
// them with it. It changes the wiring, never the prompt's text.
// +kubebuilder:validation:Enum=keep;replace
type HarnessPrompt string

// The values of HarnessPrompt.
const (
	HarnessPromptKeep    HarnessPrompt = "keep"
	HarnessPromptReplace HarnessPrompt = "replace"
)

// PersonaSpec declares an agent persona: its model settings, its Markdown body,
// what it inherits, and how it changes the platform system prompt.
// +kubebuilder:pruning:PreserveUnknownFields
type PersonaSpec struct {
	// Description is free text, at most 1024 bytes.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Model is the model the agent runs (.Model); .ModelFamily is derived from it.
	// At most MaxModelBytes.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Model *string `json:"model,omitempty"`

	// Harness is the agent harness (.Harness). When no persona in the
	// inheritance chain sets it, claude.
	// +optional
	Harness *Harness `json:"harness,omitempty"`

	// ReasoningEffort is the requested reasoning effort (.ReasoningEffort).
	// At most MaxReasoningEffortBytes.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ReasoningEffort *string `json:"reasoningEffort,omitempty"`

	// HarnessPrompt is keep (the harness's built-in instructions stay, and
	// persona.md then system-prompt.md are added after them) or replace
	// (they replace the built-in instructions). When no persona in the
	// inheritance chain sets it, keep. The PromptPlatform may forbid replace.
	// +optional
	HarnessPrompt *HarnessPrompt `json:"harnessPrompt,omitempty"`

	// Streaming is true when turns run in a persistent streaming session (.Streaming).
	// +optional
	Streaming *bool `json:"streaming,omitempty"`

	// Prompt is the persona's Markdown body. It is literal text, never
	// executed as a template. The bodies of the inheritance chain, joined,
	// are .Persona.Prompt and the persona.md key of the ConfigMap.
	// +optional
	Prompt string `json:"prompt,omitempty"`

	// Inherit lists parent Personas in the same namespace. The chain is the
	// post-order depth-first walk of inherit, each persona once, this persona last.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Inherit []PersonaName `json:"inherit,omitempty"`

	// Layers lists PromptLayers in the same namespace, composed onto the
	// platform prompt in rank order of their source.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Layers []LayerReference `json:"layers,omitempty"`

	// SystemPrompt changes the platform sections and adds extensions.
	// +optional
	SystemPrompt *SystemPromptSpec `json:"systemPrompt,omitempty"`

	// Vars are template variables, read with {{ index .Vars "key" }}.
	// +optional
	Vars map[string]string `json:"vars,omitempty"`

	// Context holds static values for the per-turn template variables.
	// +optional
	Context *PersonaContext `json:"context,omitempty"`

	// Variants are extra renders, each written to system-prompt.<name>.md,
	// with the variant's fields overriding the persona's.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Variants []Variant `json:"variants,omitempty"`

	// RevisionHistoryLimit is how many snapshots of earlier revisions
	// (ConfigMaps persona-<name>.r<n>) are kept besides the current one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +kubebuilder:default=3
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Rollout releases each new revision as a canary on a share of new
	// pods, promoted step by step (personas.md#prompt-releases). Without
	// it, each new revision is delivered at once.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`
}

// The lengths of what a tenant sets outside its templates, which the
// guardrails-only delivery would otherwise carry (model and reasoning
// effort, the persona's and each variant's): far above any real value (a
// model id is under 100 bytes, an effort a word), far below what could
// crowd a guardrail out of the ConfigMap. 253 is a DNS name's length, the
// longest a model id in a URL-like form could take.
const (
	MaxModelBytes           = 253
	MaxReasoningEffortBytes = 64
)

// DefaultRevisionHistoryLimit is spec.revisionHistoryLimit when unset, and
// MaxRevisionHistoryLimit its largest value.
const (
	DefaultRevisionHistoryLimit = 3
	MaxRevisionHistoryLimit     = 20
)

// HistoryLimit is spec.revisionHistoryLimit, or its default.
func (s *PersonaSpec) HistoryLimit() int {
	if s.RevisionHistoryLimit == nil {
		return DefaultRevisionHistoryLimit
	}
	return int(*s.RevisionHistoryLimit)
}

// PersonaName is the name of a Persona.
// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
type PersonaName string

// LayerReference names a PromptLayer in the same namespace.
// +kubebuilder:pruning:PreserveUnknownFields
type LayerReference struct {
	// Name is the PromptLayer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SystemPromptSpec changes the platform system prompt.
// +kubebuilder:pruning:PreserveUnknownFields
type SystemPromptSpec struct {
	// Platform overrides platform sections by key: replace supplies the
	// section's template, remove: true drops it. Unset keys inherit.
	// Keys: persona, workspace, gitPush, branchCreated, commitSigning,
	// ghGateway, gitWrapper, forkPr, prDashboardLink, prMergeability, waiver,
	// structuredOutput, opencodeStructuredOutput, knowledge, eventDelivery,
	// completion, expectedOutput, tasks, autonomousTurn.
	// Any other key is refused at admission, with the key that was meant.
	// +kubebuilder:validation:MaxProperties=19
	// +optional
	Platform map[string]PlatformOverride `json:"platform,omitempty"`

	// Extensions are sections of the persona's own, rendered in order after
	// every platform section.
	// +listType=map
	// +listMapKey=id
	// +optional
	Extensions []Extension `json:"extensions,omitempty"`
}

// PlatformOverride replaces or removes one platform section.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.replace) != has(self.remove)",message="set exactly one of replace (the section's template) and remove: true"
// +kubebuilder:validation:XValidation:rule="!has(self.remove) || self.remove",message="remove: false is not allowed; leave the key unset to inherit the section"
type PlatformOverride struct {
	// Replace is the section's Go template; an empty one renders the section to nothing.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Replace *string `json:"replace,omitempty"`
	// Remove drops the section. Only true is allowed.
	// +optional
	Remove *bool `json:"remove,omitempty"`
}

// Extension is a section of the persona's own.
// +kubebuilder:pruning:PreserveUnknownFields
type Extension struct {
	// ID names the extension: a lower-case letter, then up to 62 lower-case
	// letters, digits or underscores.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	ID string `json:"id"`
	// Template is the extension's Go template; it must not be empty.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Template string `json:"template"`
}

// Variant is an extra render of the persona with some fields overridden.
// +kubebuilder:pruning:PreserveUnknownFields
type Variant struct {
	// Name names the variant; its prompt is written to system-prompt.<name>.md.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	Name string `json:"name"`
	// Harness overrides the persona's harness.
	// +optional
	Harness Harness `json:"harness,omitempty"`
	// Model overrides the persona's model; at most MaxModelBytes.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Model string `json:"model,omitempty"`
	// ReasoningEffort overrides the persona's reasoning effort; at most
	// MaxReasoningEffortBytes.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// HarnessPrompt overrides the persona's harnessPrompt.
	// +optional
	HarnessPrompt HarnessPrompt `json:"harnessPrompt,omitempty"`
}

// RenderedSection is the provenance of one rendered piece of the system prompt.
type RenderedSection struct {
	// Name is the piece: platform.<key>, extension.<id>, layer.<name>,
	// userSystemPrompt or appendSystemPrompt.
	Name string `json:"name"`
	// Origin is default, platform/default (the PromptPlatform's),
	// persona/<name>, layer/<name> or clusterlayer/<name>.
	Origin string `json:"origin"`
	// Bytes is the size of the rendered piece.
	Bytes int64 `json:"bytes"`
}

// Dependency is an object the last render read.
type Dependency struct {
	// Kind is Persona, PromptLayer or ConfigMap (in the persona's
	// namespace), Namespace, ClusterPromptLayer or PromptPlatform.
	Kind string `json:"kind"`
	// Name is the object's name, in the persona's namespace for a
	// namespaced kind.
	Name string `json:"name"`
}

// PersonaStatus is the observed state of a Persona.
type PersonaStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready and, when the persona cannot become Ready until
	// another object changes, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ConfigMapName is the ConfigMap holding the render.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
	// ContentHash is sha256:<hex> of the ConfigMap data.
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
	// RenderedBytes is the size of the ConfigMap data.
	// +optional
	RenderedBytes int64 `json:"renderedBytes,omitempty"`
	// Sections is the provenance of each rendered piece of system-prompt.md.
	// +optional
	Sections []RenderedSection `json:"sections,omitempty"`
	// Dependencies are the objects the render read: Personas, PromptLayers,
	// ConfigMaps, the Namespace, ClusterPromptLayers and the PromptPlatform.
	// +optional
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// CurrentRevision is the revision delivered in the ConfigMap.
	// +optional
	CurrentRevision int64 `json:"currentRevision,omitempty"`
	// LatestRevision is the revision of the latest render.
	// +optional
	LatestRevision int64 `json:"latestRevision,omitempty"`
	// History is the last MaxStatusHistory revisions, oldest first.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	History []RevisionHistoryEntry `json:"history,omitempty"`
	// PinnedRevision is the revision the pin-revision annotation names
	// while the pin is honoured. The ConfigMap then delivers it, or, when
	// the guardrails changed since, a revision based on it.
	// +optional
	PinnedRevision int64 `json:"pinnedRevision,omitempty"`
	// Agents counts the running pods the webhook injected with a snapshot
	// of this Persona, by revision; pods that mount the live ConfigMap are
	// not counted, their revision changes under them.
	// +optional
	Agents *AgentsStatus `json:"agents,omitempty"`
	// Canary is the canary of spec.rollout while it runs, and after an
	// abort until a newer revision.
	// +optional
	Canary *CanaryStatus `json:"canary,omitempty"`
}

// AgentsStatus is how many injected pods run each revision of a Persona.
type AgentsStatus struct {
	// Current is the number of injected pods on status.currentRevision.
	Current int32 `json:"current"`
	// Revisions counts the injected pods by revision, newest first, at most
	// MaxAgentRevisions revisions.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=revision
	// +optional
	Revisions []RevisionAgents `json:"revisions,omitempty"`
}

// MaxAgentRevisions is how many revisions status.agents.revisions names.
const MaxAgentRevisions = 32

// RevisionAgents is how many injected pods run one revision.
type RevisionAgents struct {
	// Revision is the revision's number.
	Revision int64 `json:"revision"`
	// Pods is the number of pods that mount its snapshot.
	Pods int32 `json:"pods"`
}

// MaxStatusHistory is how many revisions status.history holds.
const MaxStatusHistory = 10

// RevisionHistoryEntry is one revision of a Persona's rendered content.
type RevisionHistoryEntry struct {
	// Revision is the revision's number.
	Revision int64 `json:"revision"`
	// ContentHash is the content hash of its data.
	ContentHash string `json:"contentHash"`
	// Time is when it was rendered.
	Time metav1.Time `json:"time"`
	// Cause is the object whose change made it.
	Cause RevisionInput `json:"cause"`
	// Release is what became of it as a canary of spec.rollout; unset for
	// a revision delivered at once.
	// +optional
	Release *RevisionRelease `json:"release,omitempty"`
}

// RevisionRelease is what became of a revision released as a canary.
type RevisionRelease struct {
	// Outcome is Canary while it runs, then Promoted or Aborted.
	// +kubebuilder:validation:Enum=Canary;Promoted;Aborted
	Outcome string `json:"outcome"`
	// Message says why: the step or command that promoted it, the
	// AnalysisRun's message or the command that aborted it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// RevisionInput is an object a render read, at its version: one counted by
// generation is named with it, a ConfigMap or a Namespace with its
// resourceVersion. A revision's cause is one; its Kind is
// RevisionCauseOperator when no input changed: the operator's own rendering
// did (a new version, or the first revision of a ConfigMap written before
// revisions existed).
type RevisionInput struct {
	Kind string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// RevisionCauseOperator is the Kind of a revision's cause that is the operator.
const RevisionCauseOperator = "operator"

// Persona is an agent persona, rendered by the operator into the ConfigMap
// persona-<name> that agent pods mount.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=prompts
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="ConfigMap",type=string,JSONPath=`.status.configMapName`
// +kubebuilder:printcolumn:name="Bytes",type=integer,JSONPath=`.status.renderedBytes`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.currentRevision`
// +kubebuilder:printcolumn:name="Agents",type=integer,JSONPath=`.status.agents.current`,description="Injected pods on the delivered revision"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z][a-z0-9-]{0,62}$')",message="metadata.name must match ^[a-z][a-z0-9-]{0,62}$"
type Persona struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PersonaSpec `json:"spec,omitempty"`
	// Status reads {observedGeneration: -1} until the controller first
	// writes it, so that kstatus and Argo CD read a new object as in
	// progress rather than current (the API server applies the default to
	// objects it reads, and keeps no status from a create).
	// +optional
	// +kubebuilder:default={observedGeneration:-1}
	Status PersonaStatus `json:"status,omitempty"`
}

// PersonaList is a list of Personas.
// +kubebuilder:object:root=true
type PersonaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Persona `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Persona{}, &PersonaList{})
}
