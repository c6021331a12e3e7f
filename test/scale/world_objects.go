package main

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The shared objects every measured Persona reads.
const (
	parentName  = "platform-base"
	policyLayer = "org-policy"
	sharedLayer = "team-notes" // the layer the fan-out phase edits
)

// parentPersona is the persona every measured persona inherits: a realistic
// Markdown body, a model, a replaced section, an extension at its revision
// version and a context.
func parentPersona(ns string, version int) *v1alpha1.Persona {
	body := strings.Repeat("You are a careful coding agent working for the platform team. Read the code before changing it, "+
		"keep changes small and reviewable, and explain what you did and why in the pull request description.\n", 6)
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: parentName, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Description:     "The platform's base persona.",
			Model:           new("claude-sonnet-4-6"),
			ReasoningEffort: new("medium"),
			Prompt:          body,
			SystemPrompt: &v1alpha1.SystemPromptSpec{
				Platform: map[string]v1alpha1.PlatformOverride{
					"workspace": {Replace: new("{{if .Repos}}Repositories: {{range .Repos}}{{.Name}} at {{.Dir}} on {{.Branch}}; {{end}}{{end}}\nWork in {{.WorkspaceDir}}.")},
					"waiver":    {Remove: new(true)},
				},
				Extensions: []v1alpha1.Extension{{ID: "house_rules", Template: houseRules(version)}},
			},
			Vars: map[string]string{"team": "platform", "oncall": "#platform-oncall"},
			Context: &v1alpha1.PersonaContext{
				WorkspaceDir: new("/workspace"),
				Repos: []v1alpha1.Repo{
					{Name: "acme/api", CloneURL: "https://github.com/acme/api.git", Dir: "/workspace/api", Branch: "agent/work", BranchCreated: true},
					{Name: "acme/web", CloneURL: "https://github.com/acme/web.git", Dir: "/workspace/web", Branch: "main"},
				},
				ExpectedOutput: new("pr"),
			},
		},
	}
}

// houseRules is the parent's extension; version changes it.
func houseRules(version int) string {
	return fmt.Sprintf("House rules, revision %d, for {{ .AgentRef }} ({{ .ModelFamily | default \"any model\" }}): run the tests before every push.", version)
}

// layers are the two PromptLayers every measured persona lists.
func layers(ns, sharedText string) []*v1alpha1.PromptLayer {
	return []*v1alpha1.PromptLayer{
		{
			ObjectMeta: metav1.ObjectMeta{Name: policyLayer, Namespace: ns},
			Spec: v1alpha1.PromptLayerSpec{Source: "user", Mode: v1alpha1.LayerModeAppend, Template: new(
				"Follow the organization's security policy: never commit secrets, never disable tests, " +
					"and ask before deleting data.{{ if .GitHubGateway }} Use the GitHub gateway for every gh call.{{ end }}")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: sharedLayer, Namespace: ns},
			Spec:       v1alpha1.PromptLayerSpec{Source: "app", Mode: v1alpha1.LayerModeAppend, Template: new(sharedText)},
		},
	}
}

// sharedTemplate is the edited layer's template; version changes it.
func sharedTemplate(version int) string {
	return fmt.Sprintf("Team {{ index .Vars \"team\" }} notes, revision %d: page {{ index .Vars \"oncall\" }} when blocked.", version)
}

// guardrailLabel is the Namespace label the ClusterPromptLayer of a round
// selects: a ClusterPromptLayer is cluster-scoped, so each round has its
// own, named for the round, which selects only that round's namespaces.
const guardrailLabel = "scale.persona-operator.dev/guardrail"

// roundLabels are the labels of round's measured namespaces.
func roundLabels(round int) map[string]string {
	return map[string]string{guardrailLabel: fmt.Sprintf("round-%d", round)}
}

// guardrail is round's ClusterPromptLayer, whose template is text: it
// selects every Persona of the namespaces labelled roundLabels(round).
func guardrail(round int, text string) *v1alpha1.ClusterPromptLayer {
	return &v1alpha1.ClusterPromptLayer{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-guardrail-%d", round)},
		Spec: v1alpha1.ClusterPromptLayerSpec{
			Description:       fmt.Sprintf("The scale harness's guardrail of round %d.", round),
			Position:          v1alpha1.ClusterLayerLast,
			Template:          text,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: roundLabels(round)},
		},
	}
}

// guardrailTemplate is the ClusterPromptLayer's template; version changes it.
func guardrailTemplate(version int) string {
	return fmt.Sprintf("Platform guardrail, revision %d: never print a secret, never push to a protected branch, "+
		"and ask {{ index .Vars \"oncall\" }} before deleting data.", version)
}

// persona is the i-th measured persona: it inherits the parent and lists
// both layers. It keeps no snapshot besides its current revision's, so that
// every fan-out makes all the writes of a Persona whose history is full:
// the ConfigMap's update, the new snapshot, the old one's deletion and the
// status.
func persona(ns string, i int) *v1alpha1.Persona {
	name := fmt.Sprintf("agent-%05d", i)
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Description: "A measured persona.",
			Inherit:     []v1alpha1.PersonaName{parentName},
			Layers:      []v1alpha1.LayerReference{{Name: policyLayer}, {Name: sharedLayer}},
			Prompt:      fmt.Sprintf("You are agent %d. Review pull requests for correctness first, style second.\n", i),
			Vars:        map[string]string{"ticket": fmt.Sprintf("PLAT-%d", 1000+i)},
			Variants:    []v1alpha1.Variant{{Name: "codex", Harness: v1alpha1.HarnessCodex, Model: "gpt-5-codex"}},

			RevisionHistoryLimit: new(int32(0)),
		},
	}
}

// smallPersona is a small valid persona, for the webhook latency samples.
func smallPersona(ns, name string) *v1alpha1.Persona {
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Prompt: "A small persona.",
			SystemPrompt: &v1alpha1.SystemPromptSpec{
				Extensions: []v1alpha1.Extension{{ID: "note", Template: "Harness: {{ .Harness }}."}},
			},
		},
	}
}

// invalidPersona is refused by the webhook but not by the CRD schema: its
// template names a variable that does not exist. Created with dry-run, it
// tells whether the webhook is active.
func invalidPersona(ns string) *v1alpha1.Persona {
	p := smallPersona(ns, "webhook-probe")
	p.Spec.SystemPrompt.Extensions[0].Template = "{{ .NoSuchVariable }}"
	return p
}

// promptPlatform is the PromptPlatform at its revision version (≥ 1): it
// replaces the completion section, which every measured Persona renders,
// and removes the knowledge section.
func promptPlatform(version int) *v1alpha1.PromptPlatform {
	return &v1alpha1.PromptPlatform{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName},
		Spec: v1alpha1.PromptPlatformSpec{
			Description: "The scale harness's platform.",
			Sections: map[string]v1alpha1.PlatformOverride{
				"completion": {Replace: new(platformCompletion(version))},
				"knowledge":  {Remove: new(true)},
			},
		},
	}
}

// platformCompletion is the PromptPlatform's completion section; version
// changes it.
func platformCompletion(version int) string {
	return fmt.Sprintf("Finish the task with a summary of what you changed, platform revision %d; "+
		"post it where {{ .AgentRef }} reports to.", version)
}
