package v1alpha1

// Kinds of this API, and the core kinds a render reads (a PromptLayer's
// templateFrom ConfigMap, the labels of a Persona's Namespace): the kinds a
// Persona's status.dependencies names.
const (
	PersonaKind            = "Persona"
	PromptLayerKind        = "PromptLayer"
	ClusterPromptLayerKind = "ClusterPromptLayer"
	PromptPlatformKind     = "PromptPlatform"
	ConfigMapKind          = "ConfigMap"
	NamespaceKind          = "Namespace"
)

// TemplateSourceLabel marks a ConfigMap whose data a PromptLayer's
// templateFrom may read, with the value "true": its owner's consent that it
// holds prompt text (promptlayers.md#template-from-a-configmap).
const TemplateSourceLabel = "prompts.persona-operator.dev/template-source"

// Condition types of every kind of this API, kstatus-compatible: Ready=False
// always comes with exactly one of Reconciling=True (the controller is still
// at work or will retry by itself) and Stalled=True (only a change to some
// object can help).
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"
)

// SnapshotFailedCondition is True on a Persona while its current revision
// has no snapshot ConfigMap (personas.md#revisions): its name is held by an
// object that is not this Persona's (reason SnapshotNameTaken), or the
// namespace's snapshots would exceed their byte cap (SnapshotBytesExceeded).
// It never holds back the live ConfigMap; the operator retries.
const (
	SnapshotFailedCondition     = "SnapshotFailed"
	SnapshotNameTakenReason     = "SnapshotNameTaken"
	SnapshotBytesExceededReason = "SnapshotBytesExceeded"
)

// GuardrailsWaitingCondition is True on a Persona while ClusterPromptLayers
// that select it are not in its ConfigMap yet because its render runs out of
// wall time and is retried (clusterpromptlayers.md#kept-through-failures):
// its lastTransitionTime is when they began to wait, so that the guardrail
// deadline survives a restart of the manager, and neither relabelling the
// Persona nor editing it starts the wait again. It is removed once the
// ConfigMap holds the ClusterPromptLayers that select the Persona.
const (
	GuardrailsWaitingCondition = "GuardrailsWaiting"
	AwaitingRenderReason       = "AwaitingRender"
)

// Reasons of a Persona's conditions.
const (
	// RenderedReason: the ConfigMap holds the render of the current generation.
	RenderedReason = "Rendered"
	// ReferenceNotFoundReason: a parent, layer, included layer, ConfigMap or
	// ConfigMap key is missing; awaited for the reference grace period, then
	// stalled. Also a PromptLayer's, for its templateFrom.
	ReferenceNotFoundReason = "ReferenceNotFound"
	// InheritanceCycleReason: the inherit chain loops; the message names it.
	InheritanceCycleReason = "InheritanceCycle"
	// InheritanceTooDeepReason: the inherit chain holds more than 64
	// Personas; the message names the first one past the limit.
	InheritanceTooDeepReason = "InheritanceTooDeep"
	// RenderFailedReason: a template fails or exceeds a render limit.
	RenderFailedReason = "RenderFailed"
	// TooLargeReason: the rendered data exceeds the ConfigMap limit.
	TooLargeReason = "TooLarge"
	// ConfigMapConflictReason: persona-<name> exists and another owner controls it.
	ConfigMapConflictReason = "ConfigMapConflict"
	// GuardrailsOnlyReason: the render failed, the ClusterPromptLayers
	// selecting the Persona changed since its last good render, and that
	// render's inputs with the new ones failed too: the ConfigMap holds
	// the ClusterPromptLayers alone.
	GuardrailsOnlyReason = "GuardrailsOnly"
	// HarnessPromptForbiddenReason: the Persona or a variant asks for
	// harnessPrompt: replace, which the PromptPlatform forbids.
	HarnessPromptForbiddenReason = "HarnessPromptForbidden"
)

// Reasons of a PromptLayer's conditions, beside ReferenceNotFoundReason.
const (
	// ValidReason: the template parses and its templateFrom resolves.
	ValidReason = "Valid"
	// TemplateInvalidReason: the template does not parse or names an unknown field.
	TemplateInvalidReason = "TemplateInvalid"
)

// PinRevisionAnnotation on a Persona makes the operator deliver the
// revision it names, a positive integer, instead of the latest render
// (personas.md#pinning). An annotation, so that a GitOps sync that does not
// manage it leaves an emergency pin alone.
const PinRevisionAnnotation = "prompts.persona-operator.dev/pin-revision"

// PinnedCondition is True on a Persona while its pin is honoured, False
// while it cannot be (reason RevisionNotFound or InvalidPin: the latest
// render is delivered), and absent without a pin. PinnedReason is then
// also Ready's reason.
const (
	PinnedCondition        = "Pinned"
	PinnedReason           = "Pinned"
	RevisionNotFoundReason = "RevisionNotFound"
	InvalidPinReason       = "InvalidPin"
	// UnpinnedReason is the Event of a pin removed.
	UnpinnedReason = "Unpinned"
)
