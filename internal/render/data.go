package render

import (
	"cmp"
	"slices"
	"strings"
)

// Data is what every template renders against (personas.md#variables). Its exported
// fields are exactly the template variables: a template naming anything else fails.
type Data struct {
	Harness            string
	Streaming          bool
	Model              string
	ModelFamily        string
	ReasoningEffort    string
	AgentRef           string
	Workspace          string
	Slug               string
	WorkspaceDir       string
	Repos              []Repo
	GitHubGateway      bool
	HasResultSchema    bool
	FlightMessages     []FlightMessage
	Knowledge          Knowledge
	ExpectedOutput     string
	Tasks              []Task
	Persona            PersonaData
	UserSystemPrompt   string
	AppendSystemPrompt string
	Vars               map[string]string
}

// Repo is one checked-out repository (.Repos[]).
type Repo struct {
	Name          string `json:"name,omitempty"`
	CloneURL      string `json:"cloneURL,omitempty"`
	Dir           string `json:"dir,omitempty"`
	Branch        string `json:"branch,omitempty"`
	BranchCreated bool   `json:"branchCreated,omitempty"`
	BaseRepo      string `json:"baseRepo,omitempty"`
	BaseCloneURL  string `json:"baseCloneURL,omitempty"`
	BaseBranch    string `json:"baseBranch,omitempty"`
	ForkOwner     string `json:"forkOwner,omitempty"`
}

// FlightMessage is one registered flight-message field (.FlightMessages[]).
type FlightMessage struct {
	Field       string `json:"field,omitempty"`
	Flight      string `json:"flight,omitempty"`
	Description string `json:"description,omitempty"`
}

// Knowledge is the turn's curated-knowledge state (.Knowledge).
type Knowledge struct {
	Injected        bool `json:"injected,omitempty"`
	CreationEnabled bool `json:"creationEnabled,omitempty"`
}

// Task is one checklist task (.Tasks[]).
type Task struct {
	ID                  string `json:"id,omitempty"`
	Subject             string `json:"subject,omitempty"`
	Status              string `json:"status,omitempty"`
	NotApplicableReason string `json:"notApplicableReason,omitempty"`
	Conditional         bool   `json:"conditional,omitempty"`
	ActivationPattern   string `json:"activationPattern,omitempty"`
}

// PersonaData is .Persona.
type PersonaData struct {
	Name   string
	Prompt string
}

// DefaultHarness is the harness when no persona in the chain, variant or turn sets one.
const DefaultHarness = "claude"

// newData builds the template data of one render of b, with the variant's
// non-empty fields overriding the persona's.
func newData(b *Bundle, v *Variant) *Data {
	d := new(Data)
	fillData(d, b, v, nil)
	return d
}

// fillData is newData into d, which an executor reuses. Flight messages
// out of order are sorted into sorted's memory, returned for the next render.
func fillData(d *Data, b *Bundle, v *Variant, sorted []FlightMessage) []FlightMessage {
	p := b.Persona
	if v != nil {
		p.Harness = cmp.Or(v.Harness, p.Harness)
		p.Model = cmp.Or(v.Model, p.Model)
		p.ReasoningEffort = cmp.Or(v.ReasoningEffort, p.ReasoningEffort)
	}
	c := &b.Context
	*d = Data{
		Harness:            cmp.Or(p.Harness, DefaultHarness),
		Streaming:          p.Streaming,
		Model:              p.Model,
		ModelFamily:        ModelFamily(p.Model),
		ReasoningEffort:    p.ReasoningEffort,
		Workspace:          cmp.Or(deref(c.Workspace), p.Namespace),
		Slug:               cmp.Or(deref(c.Slug), p.Name),
		WorkspaceDir:       deref(c.WorkspaceDir),
		Repos:              c.Repos,
		GitHubGateway:      deref(c.GitHubGateway),
		HasResultSchema:    deref(c.HasResultSchema),
		FlightMessages:     c.FlightMessages,
		ExpectedOutput:     deref(c.ExpectedOutput),
		Tasks:              c.Tasks,
		Persona:            PersonaData{Name: p.Name, Prompt: p.Prompt},
		UserSystemPrompt:   deref(c.UserSystemPrompt),
		AppendSystemPrompt: deref(c.AppendSystemPrompt),
		Vars:               b.Vars,
	}
	d.AgentRef = d.Workspace + "/" + d.Slug
	if c.Knowledge != nil {
		d.Knowledge = *c.Knowledge
	}
	if !slices.IsSortedFunc(d.FlightMessages, compareFlightMessages) {
		sorted = append(sorted[:0], d.FlightMessages...)
		slices.SortStableFunc(sorted, compareFlightMessages)
		d.FlightMessages = sorted
	}
	if d.Vars == nil {
		d.Vars = map[string]string{}
	}
	return sorted
}

func compareFlightMessages(a, b FlightMessage) int { return strings.Compare(a.Field, b.Field) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ModelFamily derives .ModelFamily from a model name (personas.md#model): the first
// rule that matches the lower-cased model wins.
func ModelFamily(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "opus"):
		return "opus"
	case strings.Contains(m, "sonnet"):
		return "sonnet"
	case strings.Contains(m, "haiku"):
		return "haiku"
	case strings.HasPrefix(m, "gpt") || strings.Contains(m, "-gpt"):
		return "gpt"
	case strings.Contains(m, "gemini"):
		return "gemini"
	}
	return ""
}
