package resolve

import (
	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// merge combines the chain (personas.md#inheritance) on top of the platform's
// sections: bodies joined; scalars, context fields, vars keys and platform
// keys won by the last persona that sets them; extensions in chain order, a
// later definition of an id replacing the template in the earlier position;
// variants from p alone.
func merge(p *v1alpha1.Persona, chain []*v1alpha1.Persona, platform map[string]render.Override) *render.Bundle {
	b := &render.Bundle{
		Version: render.BundleVersion,
		Persona: render.PersonaFields{Name: p.Name, Namespace: p.Namespace, Harness: render.DefaultHarness},
	}
	bodies := make([]string, 0, len(chain))
	var overrides map[string]render.Override
	extIndex := map[string]int{}
	for _, c := range chain {
		s := &c.Spec
		origin := "persona/" + c.Name
		bodies = append(bodies, s.Prompt)
		if s.Model != nil {
			b.Persona.Model = *s.Model
		}
		if s.Harness != nil {
			b.Persona.Harness = string(*s.Harness)
		}
		if s.ReasoningEffort != nil {
			b.Persona.ReasoningEffort = *s.ReasoningEffort
		}
		if s.Streaming != nil {
			b.Persona.Streaming = *s.Streaming
		}
		if s.HarnessPrompt != nil {
			b.Persona.HarnessPrompt = string(*s.HarnessPrompt)
		}
		for k, v := range s.Vars {
			if b.Vars == nil {
				b.Vars = map[string]string{}
			}
			b.Vars[k] = v
		}
		b.Context.Overlay(convertContext(s.Context))
		if s.SystemPrompt == nil {
			continue
		}
		overrides = overridesOf(s.SystemPrompt.Platform, origin, overrides)
		for _, e := range s.SystemPrompt.Extensions {
			ext := render.Extension{ID: e.ID, Origin: origin, Template: e.Template}
			if i, ok := extIndex[e.ID]; ok {
				b.Extensions[i] = ext
				continue
			}
			extIndex[e.ID] = len(b.Extensions)
			b.Extensions = append(b.Extensions, ext)
		}
	}
	b.Persona.Prompt = render.Join(bodies...)
	b.Sections = render.ComposeSections(platform, overrides)
	for _, v := range p.Spec.Variants {
		b.Variants = append(b.Variants, render.Variant{Name: v.Name, Harness: string(v.Harness), Model: v.Model,
			ReasoningEffort: v.ReasoningEffort, HarnessPrompt: string(v.HarnessPrompt)})
	}
	return b
}
