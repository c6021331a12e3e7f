package cli

import (
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// An unlabelled templateFrom ConfigMap is refused with the operator's message.
func TestValidateUnlabelledTemplateSource(t *testing.T) {
	file := fixtures.WriteFile(t, t.TempDir(), "a.yaml", docs(
		barePersona("p", "  layers: [{name: agents}]\n"),
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: agents}\nspec:\n  templateFrom:\n    configMapKeyRef: {name: docs, key: AGENTS.md}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: docs}\ndata: {AGENTS.md: Read me.}\n",
	))
	const problem = `ConfigMap "docs" (referenced by layer "agents") is not a template source: it lacks the label prompts.persona-operator.dev/template-source: "true"`
	r := run(t, "", "validate", "-f", file)
	r.expect(t, 1, file+":1 Persona/p: spec.layers[0]: "+problem+"\n"+
		file+":2 PromptLayer/agents: spec.templateFrom.configMapKeyRef.name: "+problem+"\n")
	if r.stderr != "2 problems found\n" {
		t.Errorf("stderr %q", r.stderr)
	}
}
