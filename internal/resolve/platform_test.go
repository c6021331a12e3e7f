package resolve_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// platformKeeping is a PromptPlatform default that removes every section
// but those it replaces.
func platformKeeping(replaced map[string]string) *v1alpha1.PromptPlatform {
	sections := map[string]v1alpha1.PlatformOverride{}
	for _, key := range render.Catalog {
		if text, ok := replaced[key]; ok {
			sections[key] = v1alpha1.PlatformOverride{Replace: ptr(text)}
			continue
		}
		sections[key] = v1alpha1.PlatformOverride{Remove: ptr(true)}
	}
	return &v1alpha1.PromptPlatform{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PromptPlatformName},
		Spec:       v1alpha1.PromptPlatformSpec{Sections: sections},
	}
}

// TestPlatformComposesBeforeInheritance renders a Persona on a platform
// that keeps three sections of its own: the chain re-replaces one, removes
// one and brings back one the platform removed. Expected text and
// provenance follow from promptplatforms.md#composition.
func TestPlatformComposesBeforeInheritance(t *testing.T) {
	pp := platformKeeping(map[string]string{
		"workspace":  "Work in {{ .Workspace }}.",
		"completion": "Say done.",
		"waiver":     "Ask before you waive a check.",
	})
	base := persona("base", v1alpha1.PersonaSpec{SystemPrompt: &v1alpha1.SystemPromptSpec{Platform: map[string]v1alpha1.PlatformOverride{
		"completion": {Replace: ptr("Report back to the team.")},
		"tasks":      {Replace: ptr("Keep a task list.")},
	}}})
	p := persona("p", v1alpha1.PersonaSpec{Inherit: inherit("base"), SystemPrompt: &v1alpha1.SystemPromptSpec{Platform: map[string]v1alpha1.PlatformOverride{
		"waiver": {Remove: ptr(true)},
	}}})
	res := resolveOK(t, set(pp, base), p)
	res.Bundle.Context.Workspace = ptr("ws-1")
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	// Catalog order: workspace, completion, tasks; waiver removed by p.
	const want = "Work in ws-1.\n\nReport back to the team.\n\nKeep a task list.\n"
	if got := out.Data["system-prompt.md"]; got != want {
		t.Errorf("system-prompt.md = %q, want %q", got, want)
	}
	var provenance []string
	for _, piece := range out.Pieces {
		provenance = append(provenance, piece.Name+" "+piece.Origin)
	}
	wantProvenance := []string{"platform.workspace platform/default", "platform.completion persona/base", "platform.tasks persona/base"}
	if !slices.Equal(provenance, wantProvenance) {
		t.Errorf("provenance %v, want %v", provenance, wantProvenance)
	}
	if !slices.Contains(res.Dependencies, v1alpha1.Dependency{Kind: "PromptPlatform", Name: "default"}) {
		t.Errorf("dependencies %v lack PromptPlatform/default", res.Dependencies)
	}
	// bundle.json carries the resolved sections: a per-turn render from
	// it needs no PromptPlatform.
	again, err := render.UnmarshalBundle([]byte(out.Data["bundle.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Sections, res.Bundle.Sections) {
		t.Errorf("bundle.json sections %v, want %v", again.Sections, res.Bundle.Sections)
	}
}

// TestNoPlatformIsNoDependency: without a PromptPlatform the shipped
// sections stand, nothing is missing and nothing is listed.
func TestNoPlatformIsNoDependency(t *testing.T) {
	res := resolveOK(t, set(), persona("p", v1alpha1.PersonaSpec{}))
	for _, d := range res.Dependencies {
		if d.Kind == v1alpha1.PromptPlatformKind {
			t.Errorf("dependency %v without a PromptPlatform", d)
		}
	}
	if !slices.Equal(res.Bundle.Sections, render.DefaultSections()) {
		t.Error("the sections are not the shipped ones")
	}
}

// A PromptPlatform of another name is none: only default is read.
func TestOnlyDefaultIsThePlatform(t *testing.T) {
	other := platformKeeping(nil)
	other.Name = "other"
	res := resolveOK(t, set(other), persona("p", v1alpha1.PersonaSpec{}))
	if !slices.Equal(res.Bundle.Sections, render.DefaultSections()) {
		t.Error("a PromptPlatform not named default changed the sections")
	}
}
