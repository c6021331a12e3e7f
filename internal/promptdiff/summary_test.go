package promptdiff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// output is the render of pieces, given as name, text pairs: joined with
// one blank line and ended with one newline (personas.md#delivery).
func output(extra map[string]string, pieces ...string) *render.Output {
	out := &render.Output{Data: map[string]string{"bundle.json": "{}"}}
	var texts []string
	for i := 0; i < len(pieces); i += 2 {
		out.Pieces = append(out.Pieces, render.Piece{Name: pieces[i], Text: pieces[i+1]})
		texts = append(texts, pieces[i+1])
	}
	out.Data[render.SystemPromptKey] = ""
	if len(texts) > 0 {
		out.Data[render.SystemPromptKey] = strings.Join(texts, "\n\n") + "\n"
	}
	for k, v := range extra {
		out.Data[k] = v
	}
	return out
}

// statusOf is the status.sections the operator records for out.
func statusOf(out *render.Output) []v1alpha1.RenderedSection {
	var s []v1alpha1.RenderedSection
	for _, p := range out.Pieces {
		s = append(s, v1alpha1.RenderedSection{Name: p.Name, Bytes: int64(len(p.Text))})
	}
	return s
}

func TestChanges(t *testing.T) {
	before := output(map[string]string{"persona.md": "Body.\n"},
		"platform.persona", "You are p.",
		"extension.text", "One\nTwo",
		"layer.old-note", "Old note.")
	tests := []struct {
		name     string
		previous map[string]string
		sections []v1alpha1.RenderedSection
		after    *render.Output
		want     string
	}{
		{
			name:  "first render",
			after: before,
			// Three pieces; 1 + 1 + 2 + 1 + 1 lines.
			want: "3 sections, 6 lines",
		},
		{
			name:     "an extension changed, a layer added, a layer removed",
			previous: before.Data, sections: statusOf(before),
			after: output(map[string]string{"persona.md": "Body.\n"},
				"platform.persona", "You are p.",
				"extension.text", "One\nTwo changed",
				"layer.house-style", "House style."),
			// Old lines: You are p. / "" / One / Two / "" / Old note.
			// New lines: You are p. / "" / One / Two changed / "" / House style.
			// Two removed, two added.
			want: "added layer.house-style; removed layer.old-note; changed extension.text; system-prompt.md +2/-2 lines",
		},
		{
			name:     "only persona.md and a variant",
			previous: before.Data, sections: statusOf(before),
			after: output(map[string]string{"persona.md": "New body.\n", "system-prompt.fast.md": "Fast\n"},
				"platform.persona", "You are p.",
				"extension.text", "One\nTwo",
				"layer.old-note", "Old note."),
			want: "system-prompt.md unchanged; persona.md, system-prompt.fast.md changed",
		},
		{
			name:     "status and ConfigMap disagree: sizes decide",
			previous: map[string]string{"system-prompt.md": "hand edited\n", "persona.md": "Body.\n"},
			sections: statusOf(before),
			after: output(map[string]string{"persona.md": "Body.\n"},
				"platform.persona", "You are P.",
				"extension.text", "One\nTwo, three",
				"layer.old-note", "Old note."),
			// The one old line matches none of the six new ones.
			want: "changed extension.text; system-prompt.md +6/-1 lines",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Changes(tt.previous, tt.sections, tt.after).String()
			if got != tt.want {
				t.Errorf("summary =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestPreviousSectionsExact(t *testing.T) {
	out := output(nil, "a", "A\n\nstill A", "b", "", "c", "C")
	// An empty piece is never recorded; but a piece may hold blank lines.
	out.Pieces = append(out.Pieces[:1], out.Pieces[2])
	out.Data[render.SystemPromptKey] = "A\n\nstill A\n\nC\n"
	got, exact := previousSections(out.Data[render.SystemPromptKey], statusOf(out))
	if !exact || got[0].text != "A\n\nstill A" || got[1].text != "C" {
		t.Errorf("sections = %+v, exact %v", got, exact)
	}
	if _, exact := previousSections("", nil); !exact {
		t.Error("no sections and no text should be exact")
	}
	if _, exact := previousSections("x\n", nil); exact {
		t.Error("text without sections should not be exact")
	}
}

func TestSummaryStaysShort(t *testing.T) {
	var pieces []string
	for i := range 40 {
		pieces = append(pieces, fmt.Sprintf("layer.%s-%d", strings.Repeat("l", 50), i), "x")
	}
	got := Changes(map[string]string{}, nil, output(nil, pieces...)).String()
	if len(got) > 500 {
		t.Errorf("summary is %d bytes:\n%s", len(got), got)
	}
	if !strings.HasPrefix(got, "added layer.") || !strings.Contains(got, " more; system-prompt.md +79/-0 lines") {
		t.Errorf("summary = %s", got)
	}
	if got := list([]string{strings.Repeat("x", 500)}, "section", new(int)); got != "1 section" {
		t.Errorf("a name over the budget: %s", got)
	}
}
