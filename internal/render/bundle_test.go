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

func TestUnmarshalBundleRefuses(t *testing.T) {
	for _, raw := range []string{
		`{"version": 3, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 0, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1} {}`,
		`not json`,
		// a field's name in another case is not the field: the version is missing
		`{"Version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1, "version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
	} {
		if _, err := render.UnmarshalBundle([]byte(raw)); err == nil {
			t.Errorf("accepted %s", raw)
		}
	}
}

// A bundle from a newer operator: the fields this build does not know are
// ignored, and it renders as the same bundle without them.
func TestUnmarshalBundleIgnoresFieldsItDoesNotKnow(t *testing.T) {
	known := `{"version":1,"persona":{"name":"p","namespace":"n","prompt":"Body","harness":"codex"},"context":{},` +
		`"sections":[{"key":"persona","origin":"default","template":"{{ .Persona.Prompt }}"}],` +
		`"clusterLayers":[{"name":"g","position":"last","template":"Guard"}]}`
	newer := `{"version":1,"persona":{"name":"p","namespace":"n","prompt":"Body","harness":"codex","newField":"x"},"context":{"newContext":[1]},` +
		`"sections":[{"key":"persona","origin":"default","template":"{{ .Persona.Prompt }}","newSectionField":true}],` +
		`"clusterLayers":[{"name":"g","position":"last","template":"Guard","newGuardrailField":{}}],"newTopLevel":"y"}`
	want, err := render.UnmarshalBundle([]byte(known))
	if err != nil {
		t.Fatal(err)
	}
	got, err := render.UnmarshalBundle([]byte(newer))
	if err != nil {
		t.Fatalf("refused a newer bundle whose new fields are not required: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the newer bundle read as\n%#v\nnot\n%#v", got, want)
	}
	if text := mustRender(t, got, ""); text != "Body\n\nGuard\n" {
		t.Errorf("rendered %q, want the persona's body then the guardrail", text)
	}
}

// A bundle that requires a feature this build does not know is refused,
// naming the feature, rather than rendered without it.
func TestUnmarshalBundleRefusesAnUnknownRequiredFeature(t *testing.T) {
	raw := `{"version":1,"persona":{"name":"p","namespace":"n"},"context":{},"sections":[],` +
		`"clusterLayers":[{"name":"g","position":"last","template":"G","scope":"tools"}],"requires":["guardrailScope"]}`
	_, err := render.UnmarshalBundle([]byte(raw))
	want := `read bundle: it requires "guardrailScope", a feature this kubectl-persona does not know: ` +
		`use the kubectl-persona of the operator's release or a newer one`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// A bundle from an older operator, before Requires: it reads and renders as
// it did.
func TestUnmarshalBundleReadsAnOlderBundle(t *testing.T) {
	raw := `{"version":1,"persona":{"name":"p","namespace":"n","harness":"codex"},"context":{},` +
		`"sections":[{"key":"workspace","origin":"default","template":"Work in {{ .Harness }}."}]}`
	b, err := render.UnmarshalBundle([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b.Requires != nil {
		t.Errorf("requires %v, want none", b.Requires)
	}
	if text := mustRender(t, b, ""); text != "Work in codex.\n" {
		t.Errorf("rendered %q", text)
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

// A bundle holding a final guardrail is written as version 2, which a
// reader of version 1 only refuses (TestUnmarshalBundleRefuses's first
// case is exactly what such a reader is given); any other is version 1, as
// before, so its bytes and content hash do not change.
func TestBundleVersionMarksFinal(t *testing.T) {
	versionOf := func(b *render.Bundle) string {
		raw, err := render.MarshalBundle(b)
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitN(strings.TrimPrefix(string(raw), `{"version":`), ",", 2)[0]
	}
	b := bare("Base")
	b.ClusterLayers = []render.ClusterLayer{guardrail("f", "first", "F"), guardrail("l", "last", "L")}
	if v := versionOf(b); v != "1" {
		t.Errorf("without a final guardrail: version %s, want 1", v)
	}
	b.ClusterLayers = append(b.ClusterLayers, guardrail("z", "final", "Z"))
	if v := versionOf(b); v != "2" {
		t.Errorf("with a final guardrail: version %s, want 2", v)
	}
	raw, _ := render.MarshalBundle(b)
	got, err := render.UnmarshalBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != render.BundleVersionFinal || len(got.ClusterLayers) != 3 || got.ClusterLayers[2].Position != "final" {
		t.Errorf("read back %+v", got)
	}
}

func TestUnmarshalBundleRefusesMisplacedPositions(t *testing.T) {
	for _, raw := range []string{
		// final needs version 2
		`{"version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "clusterLayers": [{"name": "g", "position": "final"}]}`,
		// an unknown position is not taken for last
		`{"version": 2, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "clusterLayers": [{"name": "g", "position": "middle"}]}`,
		`{"version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "clusterLayers": [{"name": "g", "position": ""}]}`,
		`{"version": 3, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
	} {
		if _, err := render.UnmarshalBundle([]byte(raw)); err == nil {
			t.Errorf("accepted %s", raw)
		}
	}
	ok := `{"version": 2, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "clusterLayers": [{"name": "g", "position": "final", "template": "G"}]}`
	if _, err := render.UnmarshalBundle([]byte(ok)); err != nil {
		t.Errorf("refused a version 2 bundle with a final guardrail: %v", err)
	}
}
