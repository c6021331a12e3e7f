package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goDecodingWords are what encoding/json's errors say; none of them may
// reach a user, who wrote YAML, not Go.
// (A file name such as bundle.json: is fine.)
var goDecodingWords = regexp.MustCompile(`(^|[^.\w])json:|Go struct|Go value|unmarshal|v1alpha1\.|render\.[A-Z]`)

func assertNoGoDecodingError(t *testing.T, r result) {
	t.Helper()
	if w := goDecodingWords.FindString(r.stdout + r.stderr); w != "" {
		t.Errorf("output says %q:\nstdout:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
	}
}

// wrongTypes are spec fields of a Persona, each with a value of the wrong JSON
// type, and the field the problem must be reported at.
var wrongTypes = []struct{ spec, field string }{
	{"  description: 1", "spec.description"},
	{"  model: [a]", "spec.model"},
	{"  harness: {a: b}", "spec.harness"},
	{"  reasoningEffort: 1", "spec.reasoningEffort"},
	{`  streaming: "yes"`, "spec.streaming"},
	{"  prompt: 1", "spec.prompt"},
	{"  inherit: base", "spec.inherit"},
	{"  inherit: [1]", "spec.inherit[0]"},
	{"  layers: team-a", "spec.layers"},
	{"  layers: [team-a]", "spec.layers[0]"},
	{"  layers: [{name: 1}]", "spec.layers[0].name"},
	{"  systemPrompt: text", "spec.systemPrompt"},
	{"  systemPrompt: {platform: [a]}", "spec.systemPrompt.platform"},
	{"  systemPrompt: {platform: {waiver: text}}", "spec.systemPrompt.platform.waiver"},
	{"  systemPrompt: {platform: {waiver: {remove: 'yes'}}}", "spec.systemPrompt.platform.waiver.remove"},
	{"  systemPrompt: {extensions: {id: a}}", "spec.systemPrompt.extensions"},
	{"  systemPrompt: {extensions: [a]}", "spec.systemPrompt.extensions[0]"},
	{"  vars: [a]", "spec.vars"},
	{"  vars: {team: {a: b}}", "spec.vars.team"},
	{"  context: text", "spec.context"},
	{"  context: {repos: text}", "spec.context.repos"},
	{"  context: {repos: [{name: [a]}]}", "spec.context.repos[0].name"},
	{"  context: {knowledge: true}", "spec.context.knowledge"},
	{"  context: {gitHubGateway: 'no'}", "spec.context.gitHubGateway"},
	{"  variants: [codex]", "spec.variants[0]"},
	{"  variants: [{name: codex, harness: 1}]", "spec.variants[0].harness"},
}

// TestWrongTypesNameTheField feeds a value of the wrong type at each field
// of a parent persona that a valid child inherits: the parent's problem is
// reported at the field, the child's at its inherit entry, and no Go
// decoding error is printed by validate, render or diff.
func TestWrongTypesNameTheField(t *testing.T) {
	child := persona("child", "  inherit: [parent]")
	for _, c := range wrongTypes {
		t.Run(c.field, func(t *testing.T) {
			in := docs(persona("parent", c.spec), child)
			r := run(t, in, "validate", "-f", "-")
			assertNoGoDecodingError(t, r)
			if r.code != ExitInvalid {
				t.Errorf("exit status %d, want 1", r.code)
			}
			if want := "<stdin>:1 Persona/parent: " + c.field + ": "; !strings.Contains(r.stdout, want) {
				t.Errorf("stdout does not report %q:\n%s", want, r.stdout)
			}
			if want := `<stdin>:2 Persona/child: spec.inherit[0]: Persona "parent" is not valid (<stdin>:1); fix the problems reported there`; !strings.Contains(r.stdout, want) {
				t.Errorf("stdout does not report %q:\n%s", want, r.stdout)
			}
			assertNoGoDecodingError(t, run(t, in, "render", "-f", "-", "--persona", "child"))
			dir := t.TempDir()
			old := filepath.Join(dir, "old.yaml")
			if err := os.WriteFile(old, []byte(in), 0o600); err != nil {
				t.Fatal(err)
			}
			assertNoGoDecodingError(t, run(t, in, "diff", "-f", "-", "--against", old))
		})
	}
}

// TestWrongTypesInReadObjects covers what only a lookup decodes: metadata
// of a persona, and a ConfigMap a layer reads.
func TestWrongTypesInReadObjects(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agents-md\ndata:\n  AGENTS.md: [a]\n"
	l := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata:\n  name: agents\nspec:\n  templateFrom: {configMapKeyRef: {name: agents-md, key: AGENTS.md}}\n"
	labelled := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata:\n  name: p\n  labels: 3\nspec: {}\n"
	r := run(t, docs(cm, l, labelled), "validate", "-f", "-")
	assertNoGoDecodingError(t, r)
	for _, want := range []string{
		`<stdin>:1 ConfigMap/agents-md: data[AGENTS.md]: Invalid value: must be a string, not a list`,
		`<stdin>:3 Persona/p: metadata.labels: Invalid value: 3: must be an object, not a number`,
		`<stdin>:2 PromptLayer/agents: spec.templateFrom.configMapKeyRef.name: ConfigMap "agents-md" is not valid (<stdin>:1); fix the problems reported there`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not report\n%s\n%s", want, r.stdout)
		}
	}
}

// TestLayersStringNamesTheShape: a layer named bare, the usual slip, is told
// the object to write.
func TestLayersStringNamesTheShape(t *testing.T) {
	r := run(t, persona("p", "  layers: [team-a-agents-md]"), "validate", "-f", "-")
	r.expect(t, ExitInvalid, `<stdin>:1 Persona/p: spec.layers[0]: Invalid value: "team-a-agents-md": must be an object, not a string; write {name: team-a-agents-md}`+"\n")
}

// TestTurnAndBundleWrongTypes: a turn file and a bundle are checked field by
// field, with a did-you-mean for a misspelt key.
func TestTurnAndBundleWrongTypes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m := write("p.yaml", persona("p", "  prompt: hi"))
	for _, c := range []struct{ turn, want string }{
		{"harnes: codex\n", `harnes: Invalid value: "harnes": unknown field; did you mean "harness"?`},
		{"{harnes: codex}\n", `harnes: Invalid value: "harnes": unknown field; did you mean "harness"?`},
		{"{\"harness\": \"codex\", \"streaming\": 1}\n", `streaming: Invalid value: 1: must be a boolean, not a number`},
		{"{harness: codex}\n---\n{model: x}\n", `holds 2 documents; a turn context is one object`},
		{"streaming: 'yes'\n", `streaming: Invalid value: "yes": must be a boolean, not a string`},
		{"repos: x\n", `repos: Invalid value: "x": must be a list, not a string`},
		{"tasks: [{id: [1]}]\n", `tasks[0].id: Invalid value: must be a string, not a list`},
		{"knowledge: {injected: 1}\n", `knowledge.injected: Invalid value: 1: must be a boolean, not a number`},
	} {
		turn := write("turn.yaml", c.turn)
		r := run(t, "", "render", "-f", m, "--turn", turn)
		assertNoGoDecodingError(t, r)
		if want := "error: turn context " + turn + ": " + c.want + "\n"; r.code != ExitInvalid || r.stderr != want {
			t.Errorf("turn %q: exit %d, stderr\n%s\nwant\n%s", c.turn, r.code, r.stderr, want)
		}
	}
	bundle := run(t, "", "render", "-f", m, "-o", "bundle")
	if bundle.code != ExitOK {
		t.Fatalf("bundle: %+v", bundle)
	}
	bad := write("bundle.json", strings.Replace(bundle.stdout, `"version":1`, `"version":"1","layer":[]`, 1))
	r := run(t, "", "render", "--bundle", bad)
	assertNoGoDecodingError(t, r)
	want := "error: " + bad + `: not a bundle.json: layer: Invalid value: "layer": unknown field; did you mean "layers"?; version: Invalid value: "1": must be an integer, not a string` + "\n"
	if r.code != ExitInvalid || r.stderr != want {
		t.Errorf("bundle: exit %d, stderr\n%s\nwant\n%s", r.code, r.stderr, want)
	}
}

// Warnings are printed on standard error and in the JSON document; they do
// not fail validate.
func TestValidateWarnings(t *testing.T) {
	in := docs(persona("p", `  prompt: "({{ .Vars.team }})"`+"\n  layers: [{name: l}]"), layer("l", "usr", "", "hi"))
	r := run(t, in, "validate", "-f", "-")
	r.expect(t, ExitOK, "1 Persona, 1 PromptLayer, 0 ConfigMaps: valid\n")
	want := `Warning: <stdin>:1 Persona/p: spec.prompt: contains {{; a Persona's prompt is literal text, never executed as a template, so the braces are delivered as written; to use template variables, put the text in a systemPrompt.extensions template` + "\n" +
		`Warning: <stdin>:2 PromptLayer/l: spec.source: "usr" is not a built-in source, so it ranks as a custom source, between package and app; did you mean "user"?` + "\n"
	if r.stderr != want {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, want)
	}
	j := run(t, in, "validate", "-f", "-", "-o", "json")
	if j.code != ExitOK || !strings.Contains(j.stdout, `"field": "spec.source",`) || !strings.Contains(j.stdout, `"warnings": [`) {
		t.Errorf("json: %d\n%s", j.code, j.stdout)
	}
}

// Documents that do not decode at all are named in the reader's words.
func TestBrokenDocumentsNoGoDecodingError(t *testing.T) {
	for _, in := range []string{
		`{"apiVersion":"prompts.persona-operator.dev/v1alpha1","kind":"Persona","metadata":{"name":"p"},"spec":{},"spec":{}}`,
		`{"apiVersion": "v1", `,
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: p}\nspec: {}\nspec: {}\n",
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: p\n",
	} {
		r := run(t, in, "validate", "-f", "-")
		assertNoGoDecodingError(t, r)
		if r.code != ExitInvalid {
			t.Errorf("%s: exit %d", in, r.code)
		}
	}
}
