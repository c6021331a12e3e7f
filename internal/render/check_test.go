package render_test

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// TestCheck covers what admission rejects in a template (personas.md#validating-before-apply): parse
// errors with the personas.md#functions function set, non-literal include names, and field
// chains on . that personas.md#variables does not have where . is known statically.
func TestCheck(t *testing.T) {
	cases := []struct {
		tmpl string
		want string // "" accepts; otherwise a substring of the error
	}{
		{"plain text", ""},
		{"{{ .Harness }} {{ .Persona.Prompt }} {{ .Knowledge.Injected }} {{ .Vars.anything }}", ""},
		{"{{ range .Repos }}{{ .Name }} {{ .BaseCloneURL }}{{ end }}", ""},
		{"{{ range $i, $r := .Tasks }}{{ .ActivationPattern }}{{ $.Slug }}{{ end }}", ""},
		{"{{ with .Knowledge }}{{ .CreationEnabled }}{{ end }}", ""},
		{"{{ range .FlightMessages }}{{ .Flight }}{{ else }}{{ .AgentRef }}{{ end }}", ""},
		{"{{ with .Persona }}{{ .Name }}{{ else }}{{ .Model }}{{ end }}", ""},
		{"{{ (index .Repos 0).Anything }}", ""},            // the result of a function is not known statically
		{"{{ define \"x\" }}{{ .Anything }}{{ end }}", ""}, // . of a defined template is its caller's
		{"{{ $r := .Repos }}{{ $r.Anything }}", ""},
		{`{{ include "frag" . }} {{ . | include "frag" }}`, ""},
		{"{{ .Nope }}", ".Nope is not a template variable"},
		{"{{ .Modle }}", ".Modle is not a template variable (did you mean Model?)"},
		{"{{ $.Nope }}", "$.Nope is not a template variable"},
		{"{{ .Persona.Nmae }}", ".Persona has no field Nmae (did you mean Name?)"},
		{"{{ range .Repos }}{{ .Nmae }}{{ end }}", "an element of .Repos has no field Nmae (did you mean Name?)"},
		{"{{ with .Knowledge }}{{ .Injectd }}{{ end }}", ".Knowledge has no field Injectd"},
		{"{{ if .Repos }}{{ .Nope }}{{ end }}", ".Nope is not a template variable"},
		{"{{ .Repos.Name }}", ".Repos is a list and has no field Name"},
		{"{{ .Harness.Family }}", ".Harness is a string and has no field Family"},
		{"{{ .Vars.key.sub }}", ".Vars.key is a string and has no field sub"},
		{"{{ include .Persona.Name . }}", "include takes a literal layer name"},
		{`{{ include "frag" }}`, "include takes a layer name and data"},
		{`{{ include "frag" . . }}`, "include takes a layer name and data"},
		{"{{ include }}", "include needs a layer name and data"},
		{"{{ env \"HOME\" }}", `function "env" not defined`},
		{"{{ if }}", "missing value for if"},
		{"{{ template \"nowhere\" }}", `template "nowhere" is not defined`},
	}
	for _, c := range cases {
		err := render.Default().Check(render.KindExtension, "x", c.tmpl)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: rejected: %v", c.tmpl, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: accepted, want %q", c.tmpl, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q does not say %q", c.tmpl, err, c.want)
		}
	}
}

func TestCheckNamesTheSection(t *testing.T) {
	err := render.Default().Check(render.KindPlatform, "workspace", "\n{{ .Nope }}")
	if err == nil || !strings.HasPrefix(err.Error(), "template: platform.workspace:2:") {
		t.Errorf("got %v", err)
	}
}

func TestDefaultTemplatesPassCheck(t *testing.T) {
	removed := map[string]render.Override{"structuredOutput": {Origin: "persona/p"}}
	for _, s := range append(render.DefaultSections(), render.ComposeSections(removed)...) {
		if err := render.Default().Check(render.KindPlatform, s.Key, s.Template); err != nil {
			t.Errorf("default %s: %v", s.Key, err)
		}
	}
}
