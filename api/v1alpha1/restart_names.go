package v1alpha1

// Restarts on change (delivery.md#restarts-on-change): the label a
// Deployment, StatefulSet or DaemonSet opts in with, the annotation the
// operator records on it, and the Persona condition a halted wave shows.
// The workload names its Persona with delivery.PersonaLabel and gets the
// pod template annotation delivery.RevisionAnnotation, the names the pod
// injection reads.
const (
	// RestartOnChangeLabel, "true" on a workload's metadata, makes the
	// operator restart it onto each revision its Persona delivers.
	RestartOnChangeLabel = "prompts.persona-operator.dev/restart-on-change"
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
