package v1alpha1

// PersonaContext holds static values for the per-turn template variables.
// Every field is optional: in an inheritance chain the last persona that sets
// a field wins, and a per-turn context given to kubectl-persona overrides it.
// +kubebuilder:pruning:PreserveUnknownFields
type PersonaContext struct {
	// Workspace is .Workspace; it defaults to the persona's namespace.
	// +optional
	Workspace *string `json:"workspace,omitempty"`
	// Slug is .Slug; it defaults to the persona's name.
	// +optional
	Slug *string `json:"slug,omitempty"`
	// WorkspaceDir is .WorkspaceDir, the turn's working directory.
	// +optional
	WorkspaceDir *string `json:"workspaceDir,omitempty"`
	// Repos is .Repos, the checked-out repositories in input order.
	// +optional
	Repos []Repo `json:"repos,omitempty"`
	// GitHubGateway is .GitHubGateway: true when gh is routed through the GitHub gateway.
	// +optional
	GitHubGateway *bool `json:"gitHubGateway,omitempty"`
	// HasResultSchema is .HasResultSchema: true when the caller supplied an output schema.
	// +optional
	HasResultSchema *bool `json:"hasResultSchema,omitempty"`
	// FlightMessages is .FlightMessages, the registered flight-message fields
	// (rendered sorted by field name).
	// +optional
	FlightMessages []FlightMessage `json:"flightMessages,omitempty"`
	// Knowledge is .Knowledge, the turn's curated-knowledge state.
	// +optional
	Knowledge *Knowledge `json:"knowledge,omitempty"`
	// ExpectedOutput is .ExpectedOutput: pr, push, respond, free text, or empty.
	// +optional
	ExpectedOutput *string `json:"expectedOutput,omitempty"`
	// Tasks is .Tasks, the agent's checklist.
	// +optional
	Tasks []Task `json:"tasks,omitempty"`
	// UserSystemPrompt is .UserSystemPrompt, the requester's own system prompt.
	// It is appended to the composed prompt as literal text.
	// +optional
	UserSystemPrompt *string `json:"userSystemPrompt,omitempty"`
	// AppendSystemPrompt is .AppendSystemPrompt, the spawn's appended prompt.
	// It is appended after UserSystemPrompt as literal text.
	// +optional
	AppendSystemPrompt *string `json:"appendSystemPrompt,omitempty"`
}

// Repo is one checked-out repository (.Repos[]).
// +kubebuilder:pruning:PreserveUnknownFields
type Repo struct {
	// Name is the owner/repo display name.
	// +optional
	Name string `json:"name,omitempty"`
	// CloneURL is the clone URL.
	// +optional
	CloneURL string `json:"cloneURL,omitempty"`
	// Dir is the absolute checkout path.
	// +optional
	Dir string `json:"dir,omitempty"`
	// Branch is the working branch.
	// +optional
	Branch string `json:"branch,omitempty"`
	// BranchCreated is true when the branch was created for this agent and is not yet on the remote.
	// +optional
	BranchCreated bool `json:"branchCreated,omitempty"`
	// BaseRepo is set for a fork checkout whose pull request targets a base repository.
	// +optional
	BaseRepo string `json:"baseRepo,omitempty"`
	// BaseCloneURL is the base repository's clone URL, for a fork checkout.
	// +optional
	BaseCloneURL string `json:"baseCloneURL,omitempty"`
	// BaseBranch is the base repository's branch, for a fork checkout.
	// +optional
	BaseBranch string `json:"baseBranch,omitempty"`
	// ForkOwner is the owner of the fork, for a fork checkout.
	// +optional
	ForkOwner string `json:"forkOwner,omitempty"`
}

// FlightMessage is one registered flight-message field of the structured output (.FlightMessages[]).
// +kubebuilder:pruning:PreserveUnknownFields
type FlightMessage struct {
	// Field is the envelope field name.
	// +optional
	Field string `json:"field,omitempty"`
	// Flight is the flight the value is delivered to.
	// +optional
	Flight string `json:"flight,omitempty"`
	// Description is the registration's own description of the field.
	// +optional
	Description string `json:"description,omitempty"`
}

// Knowledge is the turn's curated-knowledge state (.Knowledge).
// +kubebuilder:pruning:PreserveUnknownFields
type Knowledge struct {
	// Injected is true when the turn injected curated-knowledge items.
	// +optional
	Injected bool `json:"injected,omitempty"`
	// CreationEnabled is true when the deployment asks agents to author knowledge.
	// +optional
	CreationEnabled bool `json:"creationEnabled,omitempty"`
}

// Task is one checklist task (.Tasks[]).
// +kubebuilder:pruning:PreserveUnknownFields
type Task struct {
	// ID is the task's ID.
	// +optional
	ID string `json:"id,omitempty"`
	// Subject is the task's subject.
	// +optional
	Subject string `json:"subject,omitempty"`
	// Status is pending, in_progress, completed or not_applicable.
	// +optional
	Status string `json:"status,omitempty"`
	// NotApplicableReason is set when Status is not_applicable.
	// +optional
	NotApplicableReason string `json:"notApplicableReason,omitempty"`
	// Conditional is true when the task has an activation condition.
	// +optional
	Conditional bool `json:"conditional,omitempty"`
	// ActivationPattern is the condition's file glob; empty when the task activates on any push.
	// +optional
	ActivationPattern string `json:"activationPattern,omitempty"`
}
