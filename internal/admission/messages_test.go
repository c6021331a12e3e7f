package admission

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErrors compares an error list with the exact messages, written by hand.
func wantErrors(t *testing.T, got field.ErrorList, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors %v, want %q", len(got), got, want)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, got[i].Error(), want[i])
		}
	}
}

// A string where an object is expected is answered with the object to write.
func TestShapeMessagesNameTheObject(t *testing.T) {
	wantErrors(t, ValidatePersona(decode(t, persona(`  layers: [team-a-agents-md, two words]
  variants: [codex]
  systemPrompt:
    platform: {waiver: No waivers.}
    extensions: [x]
`))),
		`spec.layers[0]: Invalid value: "team-a-agents-md": must be an object, not a string; write {name: team-a-agents-md}`,
		`spec.layers[1]: Invalid value: "two words": must be an object, not a string; write {name: "two words"}`,
		`spec.systemPrompt.extensions[0]: Invalid value: "x": must be an object, not a string`,
		`spec.systemPrompt.platform.waiver: Invalid value: "No waivers.": must be an object, not a string; write {replace: "No waivers."} or {remove: true}`,
		`spec.variants[0]: Invalid value: "codex": must be an object, not a string; write {name: codex}`,
	)
}

func layerWithSource(source string) string {
	return "kind: PromptLayer\nmetadata:\n  name: l\nspec:\n  source: " + source + "\n  template: hi\n"
}

// A source one edit from a built-in one is admitted (custom sources are
// legal) with a warning; a custom source far from every built-in one and a
// built-in one get none.
func TestWarnings(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want []Warning
	}{
		{layerWithSource("usr"), []Warning{{"spec.source", `"usr" is not a built-in source, so it ranks as a custom source, between package and app; did you mean "user"?`}}},
		{layerWithSource("pacakge"), []Warning{{"spec.source", `"pacakge" is not a built-in source, so it ranks as a custom source, between package and app; did you mean "package"?`}}},
		{layerWithSource("user"), nil},
		{layerWithSource("team-platform"), nil},
		{persona(`  prompt: "({{ .Vars.team }})"` + "\n"), []Warning{{"spec.prompt", "contains {{; a Persona's prompt is literal text, never executed as a template, so the braces are delivered as written; to use template variables, put the text in a systemPrompt.extensions template"}}},
		{persona("  prompt: plain\n"), nil},
	} {
		obj := decode(t, c.doc)
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("%s: refused: %v", c.doc, errs)
		}
		got := Warnings(obj)
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %v, want %v", c.doc, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s:\n got %v\nwant %v", c.doc, got[i], c.want[i])
			}
		}
	}
}
