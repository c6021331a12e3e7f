package cli

import (
	"testing"
)

// configMap is a template-source ConfigMap with one key.
func configMap(name, key, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
		"\n  labels: {prompts.persona-operator.dev/template-source: \"true\"}\ndata:\n  " + key + ": " + value + "\n"
}

// A misspelt reference gets the closest name of its kind among the
// manifests, or the closest key of the ConfigMap.
func TestReferenceDidYouMean(t *testing.T) {
	fromLayer := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: agents}\nspec:\n  templateFrom: {configMapKeyRef: {name: repo-docs, key: AGENT.md}}\n"
	in := docs(
		persona("agentic", "  prompt: Base."),
		persona("child", "  inherit: [agnetic]\n  layers: [{name: agnets}]"),
		fromLayer,
		configMap("repo-docs", "AGENTS.md", "Run make test."),
	)
	run(t, in, "validate", "-f", "-").expect(t, ExitInvalid,
		`<stdin>:2 Persona/child: spec.inherit[0]: Persona "agnetic" (referenced by persona "child") not found; did you mean "agentic"?`+"\n"+
			`<stdin>:2 Persona/child: spec.layers[0]: PromptLayer "agnets" (referenced by persona "child") not found; did you mean "agents"?`+"\n"+
			`<stdin>:3 PromptLayer/agents: spec.templateFrom.configMapKeyRef.key: key "AGENT.md" of ConfigMap "repo-docs" (referenced by layer "agents") not found; did you mean "AGENTS.md"?`+"\n")
}

// --variant names the variants there are; a misspelt one gets the closest.
func TestVariantNotFound(t *testing.T) {
	in := persona("p", "  prompt: hi\n  variants: [{name: codex, harness: codex}, {name: fast, model: haiku}]")
	r := run(t, in, "render", "-f", "-", "--variant", "nope")
	r.expect(t, ExitInvalid, "")
	if want := `error: persona "p" has no variant "nope"; its variants: codex, fast` + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	r = run(t, in, "render", "-f", "-", "--variant", "codx")
	if want := `error: persona "p" has no variant "codx"; did you mean "codex"?` + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	r = run(t, persona("p", "  prompt: hi"), "render", "-f", "-", "--variant", "codex")
	if want := `error: persona "p" has no variant "codex"; it has no variants` + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}

// An unknown command gets a did-you-mean on one line, never an empty
// error line.
func TestUnknownCommand(t *testing.T) {
	r := run(t, "", "rendr")
	r.expect(t, ExitUsage, "")
	want := `error: unknown command "rendr" for "kubectl-persona"; did you mean "render"?` + "\n" +
		"See 'kubectl-persona --help' for usage.\n"
	if r.stderr != want {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, want)
	}
	r = run(t, "", "frobnicate")
	want = `error: unknown command "frobnicate" for "kubectl-persona"; the commands are: abort, completion, diff, history, import, launch, promote, render, rollback, validate, version` + "\n" +
		"See 'kubectl-persona --help' for usage.\n"
	if r.stderr != want {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, want)
	}
}

// render names the closest persona too.
func TestRenderReferenceDidYouMean(t *testing.T) {
	in := docs(persona("agentic", "  prompt: Base."), persona("child", "  inherit: [agnetic]"))
	r := run(t, in, "render", "-f", "-", "--persona", "child")
	r.expect(t, ExitInvalid, "")
	if want := `error: persona "child": Persona "agnetic" (referenced by persona "child") not found; did you mean "agentic"?` + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
