package render

import (
	"slices"
	"strings"
)

// OriginPlatform is the origin of a section the PromptPlatform replaced
// (promptplatforms.md): there is one, named default.
const OriginPlatform = "platform/default"

// Override replaces or removes one platform section: Template is the
// replacing template, nil to remove the section. Origin names who set it.
type Override struct {
	Origin   string
	Template *string
}

// ComposeSections are the platform sections in catalog order: the shipped
// default of each key, then each level's override of it in turn (the
// PromptPlatform's, then the inheritance chain's winner), the last level
// that sets a key deciding it. A removed section is left out, and a later
// level may bring it back with a replace. Without structuredOutput (removed,
// or replaced by an empty template), a shipped section that speaks of the
// structured output is its shipped text for a prompt without one
// (unstructuredTemplates). The choice is made here, in the bundle, rather
// than by a template variable, which a kubectl-persona older than it could
// not render.
func ComposeSections(levels ...map[string]Override) []Section {
	out := make([]Section, 0, len(Catalog))
	for _, key := range Catalog {
		s, kept := Section{Key: key, Origin: OriginDefault, Template: defaultTemplates[key]}, true
		for _, level := range levels {
			o, ok := level[key]
			if !ok {
				continue
			}
			kept = o.Template != nil
			if kept {
				s = Section{Key: key, Origin: o.Origin, Template: *o.Template}
			}
		}
		if kept {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil // every section removed
	}
	if !slices.ContainsFunc(out, func(s Section) bool { return s.Key == "structuredOutput" && strings.TrimSpace(s.Template) != "" }) {
		for i, s := range out {
			if t, ok := unstructuredTemplates[s.Key]; ok && s.Origin == OriginDefault {
				out[i].Template = t
			}
		}
	}
	return out
}
