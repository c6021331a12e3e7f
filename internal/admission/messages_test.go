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
