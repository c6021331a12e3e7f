package v1alpha1

// Restarts on change (delivery.md#restarts-on-change): the label a
// Deployment, StatefulSet or DaemonSet opts in with, the annotations the
// operator writes on it, and the Persona condition a halted wave shows.
const (
	// RestartOnChangeLabel, "true" on a workload's metadata, makes the
	// operator restart it onto each revision its Persona delivers.
	RestartOnChangeLabel = "prompts.persona-operator.dev/restart-on-change"
	// WorkloadPersonaLabel names the workload's Persona, on its metadata or
	// on its pod template.
	WorkloadPersonaLabel = "prompts.persona-operator.dev/persona"
	// PodRevisionAnnotation on a pod template is the revision its pods
	// are restarted onto.
	PodRevisionAnnotation = "prompts.persona-operator.dev/revision"
	// AppliedRevisionAnnotation on a workload's metadata is the revision
	// the operator last restarted it onto.
	AppliedRevisionAnnotation = "prompts.persona-operator.dev/applied-revision"

	// RolloutHaltedCondition is True on a Persona while restarts of its
	// workloads are halted by a failed rollout. It never changes Ready.
	RolloutHaltedCondition = "RolloutHalted"
	// RolloutFailedReason: a rollout failed and halted the restarts.
	RolloutFailedReason = "RolloutFailed"
	// RolloutsResumedReason: a new revision of the cause resumed them.
	RolloutsResumedReason = "RolloutsResumed"
)
