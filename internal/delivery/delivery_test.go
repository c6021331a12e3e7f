package delivery

import (
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

func TestConfigMap(t *testing.T) {
	out := &render.Output{
		Data: map[string]string{render.SystemPromptKey: "A\n", render.PersonaKey: ""},
		Hash: "sha256:abc",
	}
	cm := ConfigMap("reviewer", "team-a", out)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" {
		t.Errorf("type = %s %s, want v1 ConfigMap", cm.APIVersion, cm.Kind)
	}
	if cm.Name != "persona-reviewer" || cm.Namespace != "team-a" {
		t.Errorf("name = %s/%s, want team-a/persona-reviewer", cm.Namespace, cm.Name)
	}
	if got := cm.Labels["app.kubernetes.io/managed-by"]; got != "persona-operator" {
		t.Errorf("managed-by label = %q", got)
	}
	if got := cm.Labels["prompts.persona-operator.dev/persona"]; got != "reviewer" {
		t.Errorf("persona label = %q", got)
	}
	if got := cm.Annotations["prompts.persona-operator.dev/content-hash"]; got != "sha256:abc" {
		t.Errorf("content-hash annotation = %q", got)
	}
	if len(cm.Data) != 2 || cm.Data[render.SystemPromptKey] != "A\n" {
		t.Errorf("data = %q", cm.Data)
	}
	if len(cm.OwnerReferences) != 0 {
		t.Errorf("owner references = %v, want none", cm.OwnerReferences)
	}
	// The data is a copy: changing it does not change the render output.
	cm.Data[render.SystemPromptKey] = "B\n"
	if out.Data[render.SystemPromptKey] != "A\n" {
		t.Error("ConfigMap shares its data map with the render output")
	}
}

func TestConfigMapName(t *testing.T) {
	if got := ConfigMapName("a"); got != "persona-a" {
		t.Errorf("ConfigMapName(a) = %q", got)
	}
}
