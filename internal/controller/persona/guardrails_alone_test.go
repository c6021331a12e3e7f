package persona

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The guardrails alone render with personas.md's zero values but .Harness,
// .Workspace and .Slug, and carry nothing the tenant set that could crowd
// them out of the ConfigMap: a Persona at every limit of what it sets
// outside its templates (model, reasoning effort, 16 variants) and a last
// good bundle full of its text leave the guardrails-only ConfigMap the same
// as a Persona that sets nothing, but for the variants' keys.
func TestGuardrailsAloneCarryNothingOfTheTenants(t *testing.T) {
	model, effort := strings.Repeat("m", v1alpha1.MaxModelBytes), strings.Repeat("e", v1alpha1.MaxReasoningEffortBytes)
	codex := v1alpha1.HarnessCodex
	full := barePersona("p", "ignored")
	full.Spec.Model, full.Spec.ReasoningEffort, full.Spec.Harness = &model, &effort, &codex
	for i := range 16 {
		full.Spec.Variants = append(full.Spec.Variants, v1alpha1.Variant{Name: fmt.Sprintf("v%02d", i), Harness: v1alpha1.HarnessOpencode,
			Model: model, ReasoningEffort: effort})
	}
	slug, text := "tenant-slug", strings.Repeat("tenant text ", 1000)
	lastGood := &render.Bundle{
		Persona: render.PersonaFields{Name: "p", Namespace: ns, Prompt: text, Model: model, Harness: string(codex), ReasoningEffort: effort, Streaming: true},
		Vars:    map[string]string{"v": text}, Context: render.Context{Slug: &slug, ExpectedOutput: &text},
	}
	guardrail := []render.ClusterLayer{{Name: "g", Position: render.PositionLast,
		Template: "{{.Slug}} in {{.Workspace}} on {{.Harness}}: model [{{.Model}}] effort [{{.ReasoningEffort}}] streaming {{.Streaming}} [{{.Persona.Prompt}}{{.ExpectedOutput}}{{index .Vars \"v\"}}]"}}

	out, err := render.Default().ConfigMap(guardrailsAlone(full, lastGood, guardrail))
	if err != nil {
		t.Fatal(err)
	}
	// .Workspace and .Slug are the namespace and the name, as with no context.
	want := fmt.Sprintf("p in %s on codex: model [] effort [] streaming false []\n", ns)
	if got := out.Data[render.SystemPromptKey]; got != want {
		t.Errorf("system-prompt.md = %q, want %q", got, want)
	}
	wantVariant := fmt.Sprintf("p in %s on opencode: model [] effort [] streaming false []\n", ns)
	for _, v := range full.Spec.Variants {
		if got := out.Data[render.VariantKey(v.Name)]; got != wantVariant {
			t.Errorf("%s = %q, want %q", render.VariantKey(v.Name), got, wantVariant)
		}
	}
	if got := out.Data[render.PersonaKey]; got != "" {
		t.Errorf("persona.md = %q, want it empty", got)
	}
	for key, value := range out.Data {
		if strings.Contains(value, model) || strings.Contains(value, effort) || strings.Contains(value, "tenant") {
			t.Errorf("%s holds the tenant's model, reasoning effort or text", key)
		}
	}
	var b map[string]any
	if err := json.Unmarshal([]byte(out.Data[render.BundleKey]), &b); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"vars", "sections", "extensions", "layers", "includes"} {
		if v, ok := b[key]; ok && v != nil && fmt.Sprint(v) != "[]" {
			t.Errorf("bundle.json holds %s: %v", key, v)
		}
	}

	// What the Persona sets adds to the guardrails the variants' keys alone.
	bare := barePersona("p", "ignored")
	bare.Spec.Harness = &codex
	for _, v := range full.Spec.Variants {
		bare.Spec.Variants = append(bare.Spec.Variants, v1alpha1.Variant{Name: v.Name, Harness: v.Harness})
	}
	minimal, err := render.Default().ConfigMap(guardrailsAlone(bare, nil, guardrail))
	if err != nil {
		t.Fatal(err)
	}
	if out.Bytes != minimal.Bytes {
		t.Errorf("the guardrails alone hold %d bytes for a Persona at every limit, %d for one that sets nothing", out.Bytes, minimal.Bytes)
	}
}
