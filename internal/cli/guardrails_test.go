package cli

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// TestRenderGuardrails: render -f applies the ClusterPromptLayers among the
// manifests, with a namespace's labels from its Namespace manifest, or only
// kubernetes.io/metadata.name when there is none. Expected prompts are the
// persona's text and the selected guardrails, first ones before it.
func TestRenderGuardrails(t *testing.T) {
	guardrails := docs(
		guardrail("by-label", "last", "By label.", "guardrails: standard"),
		guardrail("by-name", "first", "By name.", "kubernetes.io/metadata.name: team"),
	)
	for _, tc := range []struct {
		name, manifests, want string
	}{
		{"no Namespace manifest: only the name label", docs(guardrails, barePersona("p", "", "x", "P")), "By name.\n\nP\n"},
		{"a Namespace manifest's labels", docs(guardrails, namespace("team", "guardrails: standard"), barePersona("p", "", "x", "P")), "By name.\n\nP\n\nBy label.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtures.WriteFile(t, t.TempDir(), "m.yaml", tc.manifests)
			run(t, "", "render", "-f", f, "-n", "team").expect(t, 0, tc.want)
		})
	}
}

func TestValidateGuardrails(t *testing.T) {
	ok := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(guardrail("g", "last", "G", "a: b"), namespace("team", "a: b"), barePersona("p", "", "x", "P")))
	run(t, "", "validate", "-f", ok, "-n", "team").expect(t, 0, "1 Persona, 0 PromptLayers, 1 ClusterPromptLayer, 0 ConfigMaps, 1 Namespace: valid\n")

	bad := fixtures.WriteFile(t, t.TempDir(), "m.yaml", guardrail("g", "last", `{{ include "x" . }}`, "a: b"))
	r := run(t, "", "validate", "-f", bad)
	if r.code != ExitInvalid || !strings.Contains(r.stdout, bad+":1 ClusterPromptLayer/g: spec.template: Forbidden: include is not allowed") {
		t.Errorf("exit %d, stdout %q: want the include refused at spec.template", r.code, r.stdout)
	}
}
