package kube

import (
	"encoding/json"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestStatusMergePatch(t *testing.T) {
	before := &v1alpha1.PersonaStatus{
		ContentHash:  "sha256:a",
		Dependencies: []v1alpha1.Dependency{{Kind: "PromptLayer", Name: "l"}},
		Sections:     []v1alpha1.RenderedSection{{Name: "x", Origin: "default", Bytes: 1}},
	}
	after := before.DeepCopy()
	after.ContentHash = "sha256:b"
	after.Dependencies = nil
	after.Sections = append(after.Sections, v1alpha1.RenderedSection{Name: "y", Origin: "default", Bytes: 2})

	patch, err := statusMergePatch(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	st := got["status"]
	if st["contentHash"] != "sha256:b" {
		t.Errorf("contentHash not set to the new value: %s", patch)
	}
	if v, ok := st["dependencies"]; !ok || v != nil {
		t.Errorf("emptied dependencies not removed with null: %s", patch)
	}
	if s, ok := st["sections"].([]any); !ok || len(s) != 2 {
		t.Errorf("sections not replaced whole: %s", patch)
	}
	if len(got) != 1 || len(st) != 3 {
		t.Errorf("patch carries more than what changed: %s", patch)
	}
}
