package webhook

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The admission warnings are sent with the review, so kubectl shows them
// on apply; the object is admitted.
func TestAdmissionWarnings(t *testing.T) {
	v := &Validator{}
	layer := request(v1alpha1.PromptLayerKind, "l", "kind: PromptLayer\nmetadata: {name: l}\nspec: {source: usr, template: hi}\n")
	resp := v.Handle(context.Background(), layer)
	want := []string{`spec.source: "usr" is not a built-in source, so it ranks as a custom source, between package and app; did you mean "user"?`}
	if !resp.Allowed || !slices.Equal(resp.Warnings, want) {
		t.Errorf("allowed %v, warnings %q, want %q", resp.Allowed, resp.Warnings, want)
	}
}

// A wrong type is refused in admission's words, with the object to write.
func TestWrongTypeMessage(t *testing.T) {
	v := &Validator{}
	p := request(v1alpha1.PersonaKind, "p", "kind: Persona\nmetadata: {name: p}\nspec: {layers: [team-a-agents-md]}\n")
	resp := v.Handle(context.Background(), p)
	if resp.Allowed || resp.Result == nil {
		t.Fatalf("admitted: %+v", resp)
	}
	want := `Persona.prompts.persona-operator.dev "p" is invalid: spec.layers[0]: Invalid value: "team-a-agents-md": must be an object, not a string; write {name: team-a-agents-md}`
	if resp.Result.Message != want {
		t.Errorf("message\n%s\nwant\n%s", resp.Result.Message, want)
	}
	// Not JSON at all: no Go decoding error either.
	p.Object.Raw = []byte(`{"kind": "Persona", `)
	resp = v.Handle(context.Background(), p)
	if resp.Allowed || resp.Result == nil || strings.Contains(resp.Result.Message, "json:") || strings.Contains(resp.Result.Message, "unmarshal") {
		t.Errorf("a broken object: %+v", resp.Result)
	}
}
