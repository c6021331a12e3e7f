package render_test

import (
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// A parse error a template author meets by habit says what to write instead.
func TestParseHints(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"{{ now }}", `template: layer.l:1: function "now" not defined; the date and time functions are left out on purpose, so that a render gives the same bytes on every run; pass a date the prompt needs in spec.vars and read it with {{ index .Vars "date" }}`},
		{`{{ date "2006" 0 }}`, `template: layer.l:1: function "date" not defined; the date and time functions are left out on purpose, so that a render gives the same bytes on every run; pass a date the prompt needs in spec.vars and read it with {{ index .Vars "date" }}`},
		{"{{ randAlpha 3 }}", `template: layer.l:1: function "randAlpha" not defined; the random functions are left out on purpose, so that a render gives the same bytes on every run`},
		{`{{ env "HOME" }}`, `template: layer.l:1: function "env" not defined; env, expandenv and getHostByName are left out on purpose: a render reads nothing but its inputs; pass the value in spec.vars and read it with {{ index .Vars "name" }}`},
		{`{{ osBase "a/b" }}`, `template: layer.l:1: function "osBase" not defined; the os path functions are left out on purpose, as their results depend on the platform; base, dir, clean, ext and isAbs work with forward slashes on every platform`},
		{`{{ sha256sum "a" }}`, `template: layer.l:1: function "sha256sum" not defined; the cryptographic, hashing and key-generation functions are left out on purpose: a prompt needs none, and they cost work no template budget bounds`},
		{"Build ${{ github.sha }}.", `template: layer.l:1: function "github" not defined; {{ starts a template action, so to keep a GitHub Actions expression such as ${{ github.sha }} as text, write its braces as a string: ${{ "{{" }} github.sha }}`},
		// No Sprig function: nothing to add.
		{"{{ nope }}", `template: layer.l:1: function "nope" not defined`},
	} {
		_, err := render.Default().Inspect(render.KindLayer, "l", c.src)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// The escape the hint names renders the expression as written.
func TestParseHintEscapeRenders(t *testing.T) {
	got := mustRender(t, bare(`Build ${{ "{{" }} github.sha }}.`), "")
	if want := "Build ${{ github.sha }}.\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
