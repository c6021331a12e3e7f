package render_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

func TestBundleRoundTrip(t *testing.T) {
	b := bare("A <b> & {{ .Harness }}")
	b.Sections = render.DefaultSections()
	b.Layers = []render.Layer{layer("l", "app", "prepend", "L")}
	b.Includes = map[string]string{"i": "I"}
	b.Vars = map[string]string{"k": "v"}
	b.Context = render.Context{Workspace: new("w"), Repos: []render.Repo{{Name: "r", BranchCreated: true}}, Knowledge: &render.Knowledge{Injected: true}, GitHubGateway: new(false)}
	b.Variants = []render.Variant{{Name: "v", Model: "m"}}
	raw, err := render.MarshalBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "A <b> & {{ .Harness }}") {
		t.Errorf("HTML characters escaped in bundle.json")
	}
	got, err := render.UnmarshalBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Errorf("round trip changed the bundle:\n%#v\n%#v", got, b)
	}
	again, _ := render.MarshalBundle(got)
	if string(again) != string(raw) {
		t.Error("bundle.json is not stable")
	}
	if mustRender(t, got, "") != mustRender(t, b, "") {
		t.Error("a bundle read back renders differently")
	}
}

func TestUnmarshalBundleIsStrict(t *testing.T) {
	for _, raw := range []string{
		`{"version": 2, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "extra": 1}`,
		`{"version": 1} {}`,
		`not json`,
		`{"Version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1, "version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
	} {
		if _, err := render.UnmarshalBundle([]byte(raw)); err == nil {
			t.Errorf("accepted %s", raw)
		}
	}
}

func TestTurnOverridesWhatItSets(t *testing.T) {
	b := bare(`{{ .Harness }} {{ .Model }} {{ .Streaming }} {{ len .Repos }} {{ .WorkspaceDir }}`)
	b.Persona.Model = "m"
	b.Context.Repos = []render.Repo{{Name: "a"}}
	b.Context.WorkspaceDir = new("/static")
	turn := &render.Turn{Harness: new("opencode"), Streaming: new(true), Context: render.Context{Repos: []render.Repo{}, WorkspaceDir: new("/turn")}}
	if got := mustRender(t, b.WithTurn(turn), ""); got != "opencode m true 0 /turn\n" {
		t.Errorf("got %q", got)
	}
	if got := mustRender(t, b, ""); got != "claude m false 1 /static\n" {
		t.Errorf("WithTurn modified the bundle: %q", got)
	}
}
