package resolve

import (
	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// convertContext converts the API's context to the render input's.
func convertContext(c *v1alpha1.PersonaContext) *render.Context {
	if c == nil {
		return nil
	}
	return &render.Context{
		Workspace:          c.Workspace,
		Slug:               c.Slug,
		WorkspaceDir:       c.WorkspaceDir,
		Repos:              convertList(c.Repos, convertRepo),
		GitHubGateway:      c.GitHubGateway,
		HasResultSchema:    c.HasResultSchema,
		FlightMessages:     convertList(c.FlightMessages, convertFlightMessage),
		Knowledge:          convertKnowledge(c.Knowledge),
		ExpectedOutput:     c.ExpectedOutput,
		Tasks:              convertList(c.Tasks, convertTask),
		UserSystemPrompt:   c.UserSystemPrompt,
		AppendSystemPrompt: c.AppendSystemPrompt,
	}
}

// convertList keeps nil apart from empty: an empty list set by a persona
// still overrides its parents'.
func convertList[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, a := range in {
		out[i] = f(a)
	}
	return out
}

func convertRepo(r v1alpha1.Repo) render.Repo { return render.Repo(r) }

func convertFlightMessage(m v1alpha1.FlightMessage) render.FlightMessage {
	return render.FlightMessage(m)
}

func convertTask(t v1alpha1.Task) render.Task { return render.Task(t) }

func convertKnowledge(k *v1alpha1.Knowledge) *render.Knowledge {
	if k == nil {
		return nil
	}
	out := render.Knowledge(*k)
	return &out
}
