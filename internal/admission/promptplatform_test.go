package admission

import (
	"strings"
	"testing"
)

// promptPlatform is a PromptPlatform named name with the given spec (YAML,
// indented by 2).
func promptPlatform(name, spec string) string {
	return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptPlatform\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

func TestPromptPlatformAccepted(t *testing.T) {
	cases := []testCase{
		{name: "no spec", doc: "kind: PromptPlatform\nmetadata: {name: default}\n"},
		{name: "empty sections", doc: promptPlatform("default", "  sections: {}\n")},
		{name: "replace and remove", doc: promptPlatform("default", "  description: Our platform.\n  sections:\n    workspace: {replace: 'Work in {{ .Workspace }}.'}\n    ghGateway: {remove: true}\n    waiver: {replace: ''}\n")},
		{name: "description at the limit", doc: promptPlatform("default", "  description: "+strings.Repeat("d", maxDescriptionBytes)+"\n")},
		{name: "status is allowed", doc: promptPlatform("default", "  sections: {}\n") + "status: {observedGeneration: -1}\n"},
		{name: "sample", doc: sample(t, "cluster_prompts_v1alpha1_promptplatform.yaml")},
		{name: "replace forbidden", doc: promptPlatform("default", "  harnessPrompt: {allowReplace: false}\n")},
		{name: "replace allowed", doc: promptPlatform("default", "  harnessPrompt: {allowReplace: true}\n")},
		{name: "no harnessPrompt rule", doc: promptPlatform("default", "  harnessPrompt: {}\n")},
	}
	runCases(t, cases, ValidatePromptPlatform)
}

func TestPromptPlatformRejected(t *testing.T) {
	const s = "spec.sections"
	cases := []testCase{
		{
			name:  "another name",
			doc:   promptPlatform("ours", "  sections: {}\n"),
			want:  []want{invalid("metadata.name")},
			hints: map[string]string{"metadata.name": "must be default: a cluster has at most one PromptPlatform"},
		},
		{
			name:  "a template that does not parse",
			doc:   promptPlatform("default", "  sections:\n    workspace: {replace: '{{ if }}'}\n"),
			want:  []want{invalid(s + ".workspace.replace")},
			hints: map[string]string{s + ".workspace.replace": "platform.workspace"},
		},
		{
			name:  "a field that does not exist",
			doc:   promptPlatform("default", "  sections:\n    completion: {replace: '{{ .Nope }}'}\n"),
			want:  []want{invalid(s + ".completion.replace")},
			hints: map[string]string{s + ".completion.replace": ".Nope"},
		},
		{
			name:  "a key outside the catalog",
			doc:   promptPlatform("default", "  sections:\n    gitPsh: {remove: true}\n"),
			want:  []want{notSupported(s + ".gitPsh")},
			hints: map[string]string{s + ".gitPsh": `did you mean "gitPush"?`},
		},
		{
			name: "both replace and remove, and remove false",
			doc:  promptPlatform("default", "  sections:\n    waiver: {replace: x, remove: true}\n    tasks: {remove: false}\n"),
			want: []want{forbidden(s + ".waiver.remove"), invalid(s + ".tasks.remove")},
		},
		{
			name: "neither",
			doc:  promptPlatform("default", "  sections:\n    waiver: {}\n"),
			want: []want{required(s + ".waiver")},
		},
		{
			name:  "an unknown spec key",
			doc:   promptPlatform("default", "  section: {}\n"),
			want:  []want{invalid("spec.section")},
			hints: map[string]string{"spec.section": `did you mean "sections"?`},
		},
		{
			name:  "allowReplace not a bool",
			doc:   promptPlatform("default", "  harnessPrompt: {allowReplace: 'no'}\n"),
			want:  []want{invalid("spec.harnessPrompt.allowReplace")},
			hints: map[string]string{"spec.harnessPrompt.allowReplace": "must be a boolean"},
		},
		{
			name:  "a misspelled harnessPrompt key",
			doc:   promptPlatform("default", "  harnessPrompt: {allowReplaces: false}\n"),
			want:  []want{invalid("spec.harnessPrompt.allowReplaces")},
			hints: map[string]string{"spec.harnessPrompt.allowReplaces": `did you mean "allowReplace"?`},
		},
		{
			name:  "harnessPrompt written as a Persona's",
			doc:   promptPlatform("default", "  harnessPrompt: keep\n"),
			want:  []want{invalid("spec.harnessPrompt")},
			hints: map[string]string{"spec.harnessPrompt": "must be an object"},
		},
		{
			name: "a description past the limit",
			doc:  promptPlatform("default", "  description: "+strings.Repeat("d", maxDescriptionBytes+1)+"\n"),
			want: []want{tooLong("spec.description")},
		},
	}
	runCases(t, cases, ValidatePromptPlatform)
}
