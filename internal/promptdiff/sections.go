package promptdiff

import (
	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// section is one piece of a system prompt as compared: its name and text,
// or only its size when the text is not known.
type section struct {
	name  string
	text  string
	bytes int
}

// newSections are the pieces of a render.
func newSections(pieces []render.Piece) []section {
	out := make([]section, len(pieces))
	for i, p := range pieces {
		out[i] = section{name: p.Name, text: p.Text, bytes: len(p.Text)}
	}
	return out
}

// previousSections cuts the previous system-prompt.md into the pieces that
// status.sections lists, in order, by their sizes: a system prompt is its
// pieces joined with one blank line and ended with one newline
// (personas.md#delivery), so the sizes place every piece exactly, without
// rendering the previous bundle again (which a newer operator might render
// differently). exact is false when the text does not have that shape (the
// status and the ConfigMap disagree); the sections then hold sizes only.
func previousSections(text string, status []v1alpha1.RenderedSection) (out []section, exact bool) {
	out = make([]section, len(status))
	at := 0
	exact = true
	for i, s := range status {
		out[i] = section{name: s.Name, bytes: int(s.Bytes)}
		if i > 0 {
			exact = exact && hasAt(text, at, "\n\n")
			at += 2
		}
		end := at + int(s.Bytes)
		if exact && end <= len(text) {
			out[i].text = text[at:end]
		} else {
			exact = false
		}
		at = end
	}
	if len(status) == 0 {
		return out, text == ""
	}
	return out, exact && at == len(text)-1 && hasAt(text, at, "\n")
}

func hasAt(s string, at int, sub string) bool {
	return at >= 0 && at+len(sub) <= len(s) && s[at:at+len(sub)] == sub
}

// compareSections names the sections added (in the new order), removed (in
// the old order) and changed (in the new order). Without the old texts, a
// section whose size is unchanged counts as unchanged.
func compareSections(old, new []section, exact bool) (added, removed, changed []string) {
	before := map[string]section{}
	for _, s := range old {
		if _, dup := before[s.name]; !dup {
			before[s.name] = s
		}
	}
	after := map[string]bool{}
	for _, s := range new {
		if after[s.name] {
			continue
		}
		after[s.name] = true
		o, ok := before[s.name]
		switch {
		case !ok:
			added = append(added, s.name)
		case exact && o.text != s.text, !exact && o.bytes != s.bytes:
			changed = append(changed, s.name)
		}
	}
	for _, s := range old {
		if !after[s.name] {
			after[s.name] = true // a duplicate is listed once
			removed = append(removed, s.name)
		}
	}
	return added, removed, changed
}
