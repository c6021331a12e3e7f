package admission

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// layer is a PromptLayer named l with the given spec (YAML, indented by 2).
func layer(spec string) string {
	return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata:\n  name: l\nspec:\n" + spec
}

func TestPromptLayerAccepted(t *testing.T) {
	cases := []testCase{
		{name: "template", doc: layer("  description: Org rules.\n  source: user\n  mode: append\n  template: '{{ .Persona.Name }} works in {{ .WorkspaceDir }}'\n")},
		{name: "templateFrom", doc: layer("  source: team-rules\n  mode: prepend\n  templateFrom:\n    configMapKeyRef: {name: agents-md, key: AGENTS.md}\n")},
		{name: "empty template", doc: layer("  template: ''\n")},
		{name: "defaults", doc: layer("  template: x\n")},
		{name: "disable with neither", doc: layer("  mode: disable\n")},
		{name: "disable with a template", doc: layer("  mode: disable\n  template: x\n")},
		{name: "replace mode, run source", doc: layer("  mode: replace\n  source: run\n  template: x\n")},
		{name: "sources", doc: layer("  source: app\n  template: x\n")},
		{name: "subdomain name", doc: "kind: PromptLayer\nmetadata: {name: agents.md}\nspec: {template: x}\n"},
		{name: "include another layer", doc: layer("  template: '{{ include \"base\" . }}'\n")},
		{name: "null templateFrom is unset", doc: layer("  template: x\n  templateFrom: null\n")},
		{name: "template at the source limit", doc: layer("  template: " + strings.Repeat("x", render.DefaultLimits.MaxSourceBytes) + "\n")},
	}
	runCases(t, cases, ValidatePromptLayer)
}

func TestPromptLayerRejected(t *testing.T) {
	const ref = "spec.templateFrom.configMapKeyRef"
	cases := []testCase{
		{name: "missing name", doc: "kind: PromptLayer\nspec: {template: x}\n", want: []want{required("metadata.name")}},
		{name: "name not a subdomain", doc: "kind: PromptLayer\nmetadata: {name: Bad_Layer}\nspec: {template: x}\n", want: []want{invalid("metadata.name")}},
		{name: "both template and templateFrom", doc: layer("  template: x\n  templateFrom: {configMapKeyRef: {name: c, key: k}}\n"), want: []want{forbidden("spec.templateFrom")}},
		{name: "both, template empty", doc: layer("  template: ''\n  templateFrom: {configMapKeyRef: {name: c, key: k}}\n"), want: []want{forbidden("spec.templateFrom")}},
		{name: "both, in a disable layer", doc: layer("  mode: disable\n  template: x\n  templateFrom: {configMapKeyRef: {name: c, key: k}}\n"), want: []want{forbidden("spec.templateFrom")}},
		{name: "neither, append", doc: layer("  mode: append\n"), want: []want{required("spec")}},
		{name: "neither, default mode", doc: layer("  source: user\n"), want: []want{required("spec")}},
		{name: "no spec", doc: "kind: PromptLayer\nmetadata: {name: l}\n", want: []want{required("spec")}},
		{name: "bad source", doc: layer("  source: Bad_Source\n  template: x\n"), want: []want{invalid("spec.source")}},
		{name: "empty source", doc: layer("  source: ''\n  template: x\n"), want: []want{invalid("spec.source")}},
		{name: "bad mode", doc: layer("  mode: merge\n  template: x\n"), want: []want{notSupported("spec.mode")}},
		{name: "bad mode and neither", doc: layer("  mode: Disable\n"), want: []want{notSupported("spec.mode"), required("spec")}},
		{
			name:  "misspelled template",
			doc:   layer("  templat: x\n"),
			want:  []want{invalid("spec.templat"), required("spec")},
			hints: map[string]string{"spec.templat": `did you mean "template"?`},
		},
		{
			name:  "template naming a missing field",
			doc:   layer("  template: '{{ .Nope }}'\n"),
			want:  []want{invalid("spec.template")},
			hints: map[string]string{"spec.template": "layer.l"},
		},
		{name: "template with env", doc: layer("  template: '{{ env \"HOME\" }}'\n"), want: []want{invalid("spec.template")}},
		{name: "template with a computed include", doc: layer("  template: '{{ include .Slug . }}'\n"), want: []want{invalid("spec.template")}},
		{name: "template over the source limit", doc: layer("  template: " + strings.Repeat("x", render.DefaultLimits.MaxSourceBytes+1) + "\n"), want: []want{tooLong("spec.template")}},
		{name: "template not a string", doc: layer("  template: [x]\n"), want: []want{invalid("spec.template")}},
		{name: "templateFrom without configMapKeyRef", doc: layer("  templateFrom: {}\n"), want: []want{required(ref)}},
		{name: "configMapKeyRef empty", doc: layer("  templateFrom: {configMapKeyRef: {}}\n"), want: []want{required(ref + ".name"), required(ref + ".key")}},
		{name: "configMapKeyRef bad", doc: layer("  templateFrom: {configMapKeyRef: {name: Bad_Name, key: a/b}}\n"), want: []want{invalid(ref + ".name"), invalid(ref + ".key")}},
		{name: "configMapKeyRef key ..", doc: layer("  templateFrom: {configMapKeyRef: {name: c, key: '..'}}\n"), want: []want{invalid(ref + ".key")}},
		{
			name:  "configMapKeyRef misspelled",
			doc:   layer("  templateFrom: {configMapKeyRef: {nme: c, key: k}}\n"),
			want:  []want{invalid(ref + ".nme"), required(ref + ".name")},
			hints: map[string]string{ref + ".nme": `did you mean "name"?`},
		},
		{name: "spec not an object", doc: "kind: PromptLayer\nmetadata: {name: l}\nspec: x\n", want: []want{invalid("spec")}},
	}
	runCases(t, cases, ValidatePromptLayer)
}
