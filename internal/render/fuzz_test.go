package render_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/persona-operator/persona-operator/internal/render"
)

// FuzzRender renders arbitrary templates as an extension, a layer and an
// included layer. Whatever the input, rendering must not panic, must fail
// only with a RenderError, must stay within the output limit, and must be
// deterministic.
func FuzzRender(f *testing.F) {
	seeds := [][3]string{
		{"{{ .Harness }}", "{{ include \"frag\" . }}", "frag {{ .Persona.Name }}"},
		{"{{ range .Repos }}{{ .Name }}{{ end }}", "{{ define \"x\" }}{{ template \"x\" . }}{{ end }}{{ template \"x\" . }}", ""},
		{"{{ range 100000000 }}x{{ end }}", "{{ printf \"%99999999d\" 1 }}", "{{ include \"frag\" . }}"},
		{"{{ $d := dict }}{{ $_ := set $d \"a\" $d }}", "{{ toJson (until 10) }}", "{{ keys (dict \"b\" 1 \"a\" 2) }}"},
		{"{{ if }}", "{{ .Nope }}", "{{ template \"missing\" }}"},
		{"\n\n  text  \n", "{{- /* c */ -}}", "{{ with .Knowledge }}{{ .Injected }}{{ end }}"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	limits := render.DefaultLimits
	e := render.NewEngine(limits)
	f.Fuzz(func(t *testing.T, ext, layerSrc, frag string) {
		b := bare(ext)
		b.Context.Repos = []render.Repo{{Name: "o/r", BranchCreated: true}}
		b.Layers = []render.Layer{layer("l", "app", "append", layerSrc)}
		b.Includes = map[string]string{"frag": frag, "l": layerSrc}
		p1, err1 := e.Render(b, "")
		p2, err2 := e.Render(b, "")
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("nondeterministic: %v / %v", err1, err2)
		}
		if err1 != nil {
			var re *render.RenderError
			if !errors.As(err1, &re) {
				t.Fatalf("error is not a RenderError: %v", err1)
			}
			if err1.Error() != err2.Error() && !strings.Contains(err1.Error(), "longer than the limit") {
				t.Fatalf("nondeterministic errors:\n%v\n%v", err1, err2)
			}
			return
		}
		if p1.Text != p2.Text {
			t.Fatalf("nondeterministic output")
		}
		if len(p1.Text) > limits.MaxOutputBytes+1 {
			t.Fatalf("output of %d bytes", len(p1.Text))
		}
		for _, pc := range p1.Pieces {
			if pc.Text == "" || pc.Text != render.Normalize(pc.Text) {
				t.Fatalf("piece %s is not normalized: %q", pc.Name, pc.Text)
			}
		}
		_ = e.Check(render.KindExtension, "a", ext)
	})
}

// FuzzNormalize checks the normalization of personas.md#composition on arbitrary text.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", " \n\t", "\n\n  a  \n", "a\r\n", "\u00a0x\u2003"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := render.Normalize(s)
		if render.Normalize(n) != n {
			t.Fatalf("not idempotent: %q -> %q", s, n)
		}
		if strings.TrimRightFunc(n, unicode.IsSpace) != n {
			t.Fatalf("trailing whitespace left: %q", n)
		}
		if i := strings.IndexByte(n, '\n'); i >= 0 && strings.TrimSpace(n[:i]) == "" {
			t.Fatalf("leading blank line left: %q", n)
		}
		if !strings.Contains(s, n) {
			t.Fatalf("normalized text is not part of the input: %q -> %q", s, n)
		}
	})
}
