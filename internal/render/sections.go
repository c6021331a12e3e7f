package render

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
// level may bring it back with a replace.
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
	return out
}
