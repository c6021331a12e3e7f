package promptdiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// Change is what one render changed in a persona's ConfigMap: what the
// operator's Rendered Event tells, so that kubectl describe persona answers
// what an edit did.
type Change struct {
	// First is set when there is no previous render to compare with.
	First bool
	// Sections and Lines count the pieces and lines of the new
	// system-prompt.md.
	Sections, Lines int
	// Added, Removed and Changed name the sections of system-prompt.md (as
	// status.sections names them: extension.text, layer.house-style).
	Added, Removed, Changed []string
	// LinesAdded and LinesRemoved are the lines of system-prompt.md the
	// render added and removed.
	LinesAdded, LinesRemoved int
	// Keys are the other prompt keys (persona.md, the variants' prompts)
	// whose text changed, sorted.
	Keys []string
}

// Changes compares a render with the previous one: previous is the data of
// the ConfigMap before the render was written (nil when there was none) and
// sections the status.sections of the render it holds.
func Changes(previous map[string]string, sections []v1alpha1.RenderedSection, out *render.Output) Change {
	text := out.Data[render.SystemPromptKey]
	c := Change{Sections: len(out.Pieces), Lines: Lines(text)}
	if previous == nil {
		c.First = true
		return c
	}
	before := previous[render.SystemPromptKey]
	old, exact := previousSections(before, sections)
	c.Added, c.Removed, c.Changed = compareSections(old, newSections(out.Pieces), exact)
	lines := Unified("", "", before, text)
	c.LinesAdded, c.LinesRemoved = lines.Added, lines.Removed
	for _, k := range slices.Sorted(maps.Keys(out.Data)) {
		if k != render.SystemPromptKey && IsPromptKey(k) && previous[k] != out.Data[k] {
			c.Keys = append(c.Keys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(previous)) {
		if _, kept := out.Data[k]; !kept && IsPromptKey(k) {
			c.Keys = append(c.Keys, k)
		}
	}
	slices.Sort(c.Keys)
	return c
}

// namesBudget bounds the bytes of the names a summary lists, so that the
// Event note stays well under the 1 KiB the API server accepts.
const namesBudget = 400

// String is the summary for an Event note, for example
// "added layer.house-style; changed extension.text; system-prompt.md +3/-1 lines",
// or "3 sections, 12 lines" for a first render. Past a budget, names are
// counted rather than listed.
func (c Change) String() string {
	if c.First {
		return plural(c.Sections, "section") + ", " + plural(c.Lines, "line")
	}
	budget := namesBudget
	var parts []string
	for _, l := range []struct {
		verb  string
		names []string
	}{{"added", c.Added}, {"removed", c.Removed}, {"changed", c.Changed}} {
		if len(l.names) > 0 {
			parts = append(parts, l.verb+" "+list(l.names, "section", &budget))
		}
	}
	if c.LinesAdded > 0 || c.LinesRemoved > 0 {
		parts = append(parts, fmt.Sprintf("%s +%d/-%d lines", render.SystemPromptKey, c.LinesAdded, c.LinesRemoved))
	} else {
		parts = append(parts, render.SystemPromptKey+" unchanged")
	}
	if len(c.Keys) > 0 {
		parts = append(parts, list(c.Keys, "key", &budget)+" changed")
	}
	return strings.Join(parts, "; ")
}

// list lists names while the budget lasts and counts the rest.
func list(names []string, what string, budget *int) string {
	n := 0
	for n < len(names) && len(names[n])+2 <= *budget {
		*budget -= len(names[n]) + 2
		n++
	}
	switch {
	case n == 0:
		return plural(len(names), what)
	case n < len(names):
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
