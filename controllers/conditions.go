package controllers

// Condition types (SPEC §7), kstatus-compatible.
const (
	ConditionReady   = "Ready"
	ConditionStalled = "Stalled"
)

// Reasons of a Persona's Ready condition (SPEC §7).
const (
	ReasonRendered          = "Rendered"
	ReasonReferenceNotFound = "ReferenceNotFound"
	ReasonInheritanceCycle  = "InheritanceCycle"
	ReasonRenderFailed      = "RenderFailed"
	ReasonTooLarge          = "TooLarge"
	ReasonConfigMapConflict = "ConfigMapConflict"
)

// Reasons of a PromptLayer's Ready condition.
const (
	ReasonValid           = "Valid"
	ReasonTemplateInvalid = "TemplateInvalid"
)
