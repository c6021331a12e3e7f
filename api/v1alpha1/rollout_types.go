package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Rollout releases each new revision of a Persona as a canary: a share of
// the new pods gets it, step by step, until it is promoted to every new
// pod or aborted. Its steps are Argo Rollouts' canary steps. A revision a
// guardrail change caused never waits (personas.md#prompt-releases).
type Rollout struct {
	// Steps are taken in order; the canary is promoted after the last.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Steps []RolloutStep `json:"steps"`
}

// MaxRolloutSteps bounds spec.rollout.steps.
const MaxRolloutSteps = 20

// RolloutStep is one step of a Rollout: exactly one of its fields is set.
type RolloutStep struct {
	// SetWeight is the share of new pods, in percent, that get the canary
	// revision from this step on.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	SetWeight *int32 `json:"setWeight,omitempty"`
	// Pause waits for its duration, or, without one, for
	// `kubectl persona promote`.
	// +optional
	Pause *RolloutPause `json:"pause,omitempty"`
	// Analysis runs an Argo Rollouts AnalysisRun from the platform team's
	// ClusterAnalysisTemplates, and goes on when it is Successful.
	// +optional
	Analysis *RolloutAnalysis `json:"analysis,omitempty"`
}

// RolloutPause is a pause step.
type RolloutPause struct {
	// Duration is how long to wait: seconds as an integer, or a string of a
	// number and a unit, s, m or h ("30m"). Without it the step waits for
	// `kubectl persona promote`.
	// +kubebuilder:validation:XIntOrString
	// +optional
	Duration *intstr.IntOrString `json:"duration,omitempty"`
}

// MaxPauseDurationSeconds bounds a pause step's duration: a week.
const MaxPauseDurationSeconds = 7 * 24 * 3600

// RolloutAnalysis is an analysis step.
type RolloutAnalysis struct {
	// Templates are the ClusterAnalysisTemplates the AnalysisRun is made
	// of; only those the platform team labelled
	// prompts.persona-operator.dev/analysis-template: "true" are used.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	Templates []AnalysisTemplateRef `json:"templates"`
	// Args are values for the templates' declared args, taken as literals.
	// The operator sets persona, namespace, stable-revision and
	// canary-revision itself.
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=name
	// +optional
	Args []AnalysisArg `json:"args,omitempty"`
}

// AnalysisTemplateRef names a ClusterAnalysisTemplate.
type AnalysisTemplateRef struct {
	// ClusterTemplateName is the ClusterAnalysisTemplate's name.
	// +kubebuilder:validation:MaxLength=253
	ClusterTemplateName string `json:"clusterTemplateName"`
}

// AnalysisArg is a value of an arg the templates declare.
type AnalysisArg struct {
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// The args of every AnalysisRun the operator sets, never a Persona.
const (
	AnalysisArgPersona        = "persona"
	AnalysisArgNamespace      = "namespace"
	AnalysisArgStableRevision = "stable-revision"
	AnalysisArgCanaryRevision = "canary-revision"
)

// OperatorAnalysisArgs are the args the operator sets.
var OperatorAnalysisArgs = []string{AnalysisArgPersona, AnalysisArgNamespace, AnalysisArgStableRevision, AnalysisArgCanaryRevision}

// AnalysisTemplateLabel marks the ClusterAnalysisTemplates the platform
// team lets a Persona's analysis step use.
const AnalysisTemplateLabel = "prompts.persona-operator.dev/analysis-template"

// CanaryStatus is the canary of a Persona's rollout.
type CanaryStatus struct {
	// Revision is the canary revision (status.latestRevision);
	// status.currentRevision stays the stable one until promotion.
	Revision int64 `json:"revision"`
	// Weight is the share of new pods, in percent, that get it.
	Weight int32 `json:"weight"`
	// Step is the index of the step the canary is at.
	Step int32 `json:"step"`
	// StartTime is when the canary began; StepStartTime when its step did.
	StartTime     metav1.Time `json:"startTime"`
	StepStartTime metav1.Time `json:"stepStartTime"`
	// AnalysisRun is the name of the step's AnalysisRun.
	// +optional
	AnalysisRun string `json:"analysisRun,omitempty"`
	// Phase is Progressing, Paused or Aborted.
	Phase CanaryPhase `json:"phase"`
	// Message says why the canary is paused or was aborted.
	// +optional
	Message string `json:"message,omitempty"`
}

// CanaryPhase is where a canary stands.
// +kubebuilder:validation:Enum=Progressing;Paused;Aborted
type CanaryPhase string

// The phases of a canary.
const (
	CanaryProgressing CanaryPhase = "Progressing"
	CanaryPaused      CanaryPhase = "Paused"
	CanaryAborted     CanaryPhase = "Aborted"
)

// CanaryCondition is True while a canary runs, with its phase as the
// reason, and False after an abort (reason Aborted) until a newer revision.
// Ready stays True meanwhile: the stable revision is delivered.
const CanaryCondition = "Canary"

// Annotations a Persona's canary acts on, once: each names the canary
// revision it is for, so that one left over never acts on the next canary.
// PromoteAnnotation's value is <revision>:<step>, which goes past the step
// the canary waits at (a pause, or an Inconclusive analysis), or
// <revision>:full, which promotes at once; AbortAnnotation's is
// <revision>.
const (
	PromoteAnnotation = "prompts.persona-operator.dev/promote"
	AbortAnnotation   = "prompts.persona-operator.dev/abort"
)

// Labels the injection writes on each pod it gives a revision: the
// revision (delivery.RevisionLabel) and TrackLabel, canary or stable, so
// that an agent's metrics can be split by them.
const (
	TrackLabel  = "prompts.persona-operator.dev/track"
	TrackCanary = "canary"
	TrackStable = "stable"
)

// The Events and history outcomes of a release.
const (
	RolloutPromotedReason = "RolloutPromoted"
	RolloutAbortedReason  = "RolloutAborted"
	CanaryStartedReason   = "CanaryStarted"
	AnalysisStartedReason = "AnalysisStarted"
)
