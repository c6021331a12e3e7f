package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// benchLean is Murmur's bench-lean example persona, as its documentation
// writes it.
const benchLean = `---
name: bench-lean
model: claude-sonnet-4-6
systemPrompt:
  platform:
    workspace:
      replace: |
        {{if .Repos}}Repos: {{range .Repos}}{{.Name}} at {{.Dir}} ({{.Branch}}); {{end}}{{end}}
    waiver:
      remove: true
  extensions:
    - id: harness_notes
      template: |
        {{if eq .Harness "codex"}}Run the test suite before every commit.{{end}}
---
A lean benchmark persona: a compact workspace summary, no waiver reminder,
and Codex-specific guidance.
`

// readPersonas decodes the Personas of a YAML stream, strictly.
func readPersonas(t *testing.T, stream string) []v1alpha1.Persona {
	t.Helper()
	set := manifest.New("")
	set.Add("out.yaml", []byte(stream))
	if len(set.Problems) > 0 {
		t.Fatalf("the output does not read back: %v\n%s", set.Problems, stream)
	}
	var out []v1alpha1.Persona
	for _, o := range set.Objects() {
		var p v1alpha1.Persona
		if err := o.Decode(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestImportMurmur(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "bench-lean.md", benchLean)
	r := run(t, "", "import", f)
	if r.code != 0 {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	want := `---
# Source: ` + f + `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: bench-lean
spec:
  model: claude-sonnet-4-6
  systemPrompt:
    platform:
      workspace:
        replace: |
          {{if .Repos}}Repos: {{range .Repos}}{{.Name}} at {{.Dir}} ({{.Branch}}); {{end}}{{end}}
      waiver:
        remove: true
    extensions:
      - id: harness_notes
        template: |
          {{if eq .Harness "codex"}}Run the test suite before every commit.{{end}}
  prompt: |
    A lean benchmark persona: a compact workspace summary, no waiver reminder,
    and Codex-specific guidance.
`
	r.expect(t, 0, want)

	ps := readPersonas(t, r.stdout)
	if len(ps) != 1 {
		t.Fatalf("%d personas", len(ps))
	}
	p := ps[0]
	if p.Name != "bench-lean" || *p.Spec.Model != "claude-sonnet-4-6" {
		t.Errorf("persona %s/%s model %v", p.Namespace, p.Name, p.Spec.Model)
	}
	if got := p.Spec.Prompt; got != "A lean benchmark persona: a compact workspace summary, no waiver reminder,\nand Codex-specific guidance.\n" {
		t.Errorf("prompt = %q", got)
	}
	if got := *p.Spec.SystemPrompt.Platform["workspace"].Replace; got != "{{if .Repos}}Repos: {{range .Repos}}{{.Name}} at {{.Dir}} ({{.Branch}}); {{end}}{{end}}\n" {
		t.Errorf("workspace replace = %q", got)
	}

	out := fixtures.WriteFile(t, dir, "out.yaml", r.stdout)
	run(t, "", "validate", "-f", out).expect(t, 0, "1 Persona, 0 PromptLayers, 0 ConfigMaps: valid\n")
	// As Codex with one repo, the renders of the persona's own templates:
	// the workspace line and the harness note (the rest are the defaults).
	turn := fixtures.WriteFile(t, dir, "turn.yaml", "harness: codex\nrepos: [{name: o/r, dir: /w/r, branch: main}]\n")
	r = run(t, "", "render", "-f", out, "--turn", turn)
	if r.code != 0 || !strings.Contains(r.stdout, "Repos: o/r at /w/r (main);") || !strings.Contains(r.stdout, "Run the test suite before every commit.") {
		t.Errorf("render: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestImportAura(t *testing.T) {
	dir := t.TempDir()
	base := fixtures.WriteFile(t, dir, "prompts/system/base.md", "---\nname: Base\n---\nYou are Aura, a coding assistant.\n")
	agentic := fixtures.WriteFile(t, dir, "prompts/system/agentic.md", "---\nname: Agentic\ndescription: Full agentic coding prompt\ninherit: [Base]\n---\n## Critical Rules\n1. Complete every task before stopping.\n")
	r := run(t, "", "import", "-n", "agents", base, agentic)
	if r.code != 0 {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	ps := readPersonas(t, r.stdout)
	if len(ps) != 2 {
		t.Fatalf("%d personas:\n%s", len(ps), r.stdout)
	}
	if ps[0].Name != "base" || ps[0].Namespace != "agents" || ps[0].Spec.Prompt != "You are Aura, a coding assistant.\n" || ps[0].Spec.Inherit != nil {
		t.Errorf("base = %+v", ps[0])
	}
	if ps[1].Name != "agentic" || ps[1].Spec.Description != "Full agentic coding prompt" ||
		ps[1].Spec.Prompt != "## Critical Rules\n1. Complete every task before stopping.\n" ||
		len(ps[1].Spec.Inherit) != 1 || ps[1].Spec.Inherit[0] != "base" {
		t.Errorf("agentic = %+v", ps[1])
	}
	if !strings.Contains(r.stderr, `name "Agentic" becomes the Persona name "agentic"`) {
		t.Errorf("no note on the renamed persona: %s", r.stderr)
	}
	out := fixtures.WriteFile(t, dir, "out.yaml", r.stdout)
	run(t, "", "validate", "-f", out).expect(t, 0, "2 Personas, 0 PromptLayers, 0 ConfigMaps: valid\n")
	// Aura's result: the Base body, a blank line, the Agentic body
	// (persona.md is .Persona.Prompt plus one newline, personas.md#delivery).
	cm := run(t, "", "render", "-f", out, "--persona", "agentic", "-o", "configmap")
	if !strings.Contains(cm.stdout, "  persona.md: |\n    You are Aura, a coding assistant.\n\n    ## Critical Rules\n    1. Complete every task before stopping.\n") {
		t.Errorf("persona.md of agentic:\n%s%s", cm.stdout, cm.stderr)
	}
}

func TestImportBodies(t *testing.T) {
	bodies := []string{
		"",
		"one line without newline",
		"  leading spaces\nand trailing spaces   \n",
		"ends with blank lines\n\n\n",
		"windows\r\nline endings\r\n",
		"\ttabs\tinside\n",
		"---\nnot front matter: a rule in the body\n---\n",
		"{{ .Harness }} stays literal\n",
		"yes",
		"# heading\n\n- item: value\n  - nested # not a comment\n",
		"unicode: héllo wörld ✓ \u2028 \u00a0\n",
		"\n\nstarts with blank lines\n",
		"\"quoted\" and 'single' and \\backslash\n",
		"control \x01\x7f chars\n",
	}
	for _, body := range bodies {
		t.Run("", func(t *testing.T) {
			dir := t.TempDir()
			f := fixtures.WriteFile(t, dir, "p.md", "---\nname: p\n---\n"+body)
			r := run(t, "", "import", f)
			if r.code != 0 {
				t.Fatalf("exit status %d: %s", r.code, r.stderr)
			}
			if got := readPersonas(t, r.stdout)[0].Spec.Prompt; got != body {
				t.Errorf("prompt = %q, want %q\n%s", got, body, r.stdout)
			}
			run(t, "", "validate", "-f", fixtures.WriteFile(t, dir, "out.yaml", r.stdout)).expect(t, 0, "1 Persona, 0 PromptLayers, 0 ConfigMaps: valid\n")

			// Without front matter the whole file is the body.
			g := fixtures.WriteFile(t, dir, "whole.md", "x"+body)
			r = run(t, "", "import", g)
			if r.code != 0 {
				t.Fatalf("exit status %d: %s", r.code, r.stderr)
			}
			if p := readPersonas(t, r.stdout)[0]; p.Name != "whole" || p.Spec.Prompt != "x"+body {
				t.Errorf("without front matter: %s %q", p.Name, p.Spec.Prompt)
			}
		})
	}
}

func TestImportFrontMatter(t *testing.T) {
	tests := []struct {
		name, file, content string
		code                int
		stderr              string // part of stderr, or the wanted name when code is 0
		prompt              string
	}{
		{name: "empty front matter", file: "Code Reviewer.md", content: "---\n---\nBody\n", stderr: "code-reviewer", prompt: "Body\n"},
		{name: "only the first newline after --- is the fence's", file: "p.md", content: "---\nname: p\n---\n\nBody", stderr: "p", prompt: "\nBody"},
		{name: "CRLF fences", file: "p.md", content: "---\r\nname: p\r\n---\r\nBody\r\n", stderr: "p", prompt: "Body\r\n"},
		{name: "byte order mark", file: "p.md", content: "\ufeff---\nname: p\n---\nBody", stderr: "p", prompt: "Body"},
		{name: "closing fence at the end", file: "p.md", content: "---\nname: p\n---", stderr: "p", prompt: ""},
		{name: "name converted", file: "p.md", content: "---\nname: \"  My_Agent v2!  \"\n---\n", stderr: "my-agent-v2"},
		{name: "digit first", file: "p.md", content: "---\nname: 42-things\n---\n", stderr: "p-42-things"},
		{name: "every persona field", file: "p.md", content: "---\nname: p\nharness: codex\nreasoningEffort: high\nstreaming: true\nvars: {team: core}\nlayers: [{name: l}]\ncontext: {workspace: w}\nvariants: [{name: fast, model: claude-haiku-4-5}]\n---\n", stderr: "p"},
		{name: "unknown key", file: "p.md", content: "---\nname: p\ntools: [Bash]\n---\n", code: 1, stderr: "p.md: tools: unknown front matter key"},
		{name: "misspelled key", file: "p.md", content: "---\nname: p\nmodle: x\n---\n", code: 1, stderr: `did you mean "model"?`},
		{name: "prompt key", file: "p.md", content: "---\nprompt: x\n---\n", code: 1, stderr: "prompt: not a front matter key"},
		{name: "bad systemPrompt", file: "p.md", content: "---\nsystemPrompt:\n  platform:\n    waiver: {replce: x}\n---\n", code: 1, stderr: "p.md: systemPrompt.platform.waiver.replce: "},
		{name: "bad harness", file: "p.md", content: "---\nharness: gemini\n---\n", code: 1, stderr: "p.md: harness: "},
		{name: "not closed", file: "p.md", content: "---\nname: p\nBody\n", code: 1, stderr: "not closed"},
		{name: "not YAML", file: "p.md", content: "---\nname: [\n---\n", code: 1, stderr: "invalid YAML"},
		{name: "not a mapping", file: "p.md", content: "---\n- a\n---\n", code: 1, stderr: "mapping"},
		{name: "repeated key", file: "p.md", content: "---\nname: a\nname: b\n---\n", code: 1, stderr: "front matter"},
		{name: "name not a string", file: "p.md", content: "---\nname: [a]\n---\n", code: 1, stderr: "name: must be a string"},
		{name: "no usable name", file: "p.md", content: "---\nname: \"日本\"\n---\n", code: 1, stderr: "no letter or digit"},
		{name: "not UTF-8", file: "p.md", content: "---\nname: p\n---\n\xff\xfe", code: 1, stderr: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := run(t, "", "import", fixtures.WriteFile(t, dir, tt.file, tt.content))
			if r.code != tt.code {
				t.Fatalf("exit status %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			if tt.code != 0 {
				if r.stdout != "" || !strings.Contains(r.stderr, tt.stderr) {
					t.Errorf("stdout %q, stderr does not contain %q:\n%s", r.stdout, tt.stderr, r.stderr)
				}
				return
			}
			p := readPersonas(t, r.stdout)[0]
			if p.Name != tt.stderr || p.Spec.Prompt != tt.prompt {
				t.Errorf("persona %q with prompt %q, want %q with %q", p.Name, p.Spec.Prompt, tt.stderr, tt.prompt)
			}
			run(t, "", "validate", "-f", fixtures.WriteFile(t, dir, "out.yaml", r.stdout), "-f", fixtures.WriteFile(t, dir, "l.yaml", layer("l", "", "", "L"))).expect(t, 0, "1 Persona, 1 PromptLayer, 0 ConfigMaps: valid\n")
		})
	}
}

func TestImportSeveral(t *testing.T) {
	dir := t.TempDir()
	a := fixtures.WriteFile(t, dir, "a/Reviewer.md", "Review.\n")
	b := fixtures.WriteFile(t, dir, "b/reviewer.md", "Review again.\n")
	r := run(t, "", "import", a, b)
	r.expect(t, 1, "")
	if !strings.Contains(r.stderr, `"reviewer" is also the name of `+a) {
		t.Errorf("stderr = %s", r.stderr)
	}
	run(t, "", "import").expect(t, 2, "")
	run(t, "", "import", filepath.Join(dir, "none.md")).expect(t, 1, "")

	// Standard input needs a name in the front matter.
	run(t, "Body\n", "import", "-").expect(t, 1, "")
	r = run(t, "---\nname: s\n---\nBody\n", "import", "-")
	if r.code != 0 || readPersonas(t, r.stdout)[0].Spec.Prompt != "Body\n" {
		t.Errorf("stdin: %d %s%s", r.code, r.stdout, r.stderr)
	}
}

func TestPersonaName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"bench-lean", "bench-lean"},
		{"Base", "base"},
		{"My Persona", "my-persona"},
		{"a_b.c", "a-b-c"},
		{"--x--", "x"},
		{"a  --  b", "a----b"},
		{"9lives", "p-9lives"},
		{"-9", "p-9"},
		{"Ünïcode", "n-code"},
		{strings.Repeat("a", 70), strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + "-b", strings.Repeat("a", 62)},
		{"p-" + strings.Repeat("1", 70), "p-" + strings.Repeat("1", 61)},
		{"1" + strings.Repeat("2", 70), "p-1" + strings.Repeat("2", 60)},
	}
	for _, tt := range tests {
		got, err := personaName(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("personaName(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "---", "日本", "!!"} {
		if got, err := personaName(in); err == nil {
			t.Errorf("personaName(%q) = %q, want an error", in, got)
		}
	}
}

func TestImportOutputIsYAML(t *testing.T) {
	// Values YAML 1.1 would read as something else stay strings.
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "p.md", "---\nname: p\nmodel: \"on\"\nreasoningEffort: \"1e3\"\ndescription: \"yes: no # maybe\"\nvars: {\"y\": \"null\", \"0x1\": \"~\"}\n---\n")
	r := run(t, "", "import", f)
	if r.code != 0 {
		t.Fatalf("%d %s", r.code, r.stderr)
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(r.stdout, "---\n")), &obj); err != nil {
		t.Fatal(err)
	}
	spec := obj["spec"].(map[string]any)
	if spec["model"] != "on" || spec["reasoningEffort"] != "1e3" || spec["description"] != "yes: no # maybe" {
		t.Errorf("spec = %v\n%s", spec, r.stdout)
	}
	vars := spec["vars"].(map[string]any)
	if vars["y"] != "null" || vars["0x1"] != "~" {
		t.Errorf("vars = %v\n%s", vars, r.stdout)
	}
}
