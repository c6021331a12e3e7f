package render_test

import (
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// bare is a bundle with every platform section removed, so that the
// expected output of a test is fully determined by personas.md#composition.
func bare(exts ...string) *render.Bundle {
	b := &render.Bundle{
		Version: render.BundleVersion,
		Persona: render.PersonaFields{Name: "p", Namespace: "ns", Harness: "claude"},
	}
	for i, e := range exts {
		b.Extensions = append(b.Extensions, render.Extension{ID: string(rune('a' + i)), Origin: "persona/p", Template: e})
	}
	return b
}

func layer(name, source, mode, text string) render.Layer {
	return render.Layer{Name: name, Source: source, Mode: mode, Template: text}
}

func mustRender(t *testing.T, b *render.Bundle, variant string) string {
	t.Helper()
	p, err := render.Default().Render(b, variant)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return p.Text
}

func renderErr(t *testing.T, b *render.Bundle) error {
	t.Helper()
	_, err := render.Default().Render(b, "")
	if err == nil {
		t.Fatalf("render succeeded, want an error")
	}
	return err
}

func pieceNames(p *render.Prompt) []string {
	var names []string
	for _, pc := range p.Pieces {
		names = append(names, pc.Name)
	}
	return names
}
