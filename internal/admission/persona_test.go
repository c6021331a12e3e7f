package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/internal/render"
)

// systemPromptSamples are the config/samples Personas that show the
// systemPrompt field (platform overrides and extensions), by file.
var systemPromptSamples = []string{
	"prompts_v1alpha1_persona_bench_lean.yaml",
	"prompts_v1alpha1_persona_bare_prompt.yaml",
	"prompts_v1alpha1_persona_model_aware_reviewer.yaml",
}

// sample reads a manifest of config/samples.
func sample(tb testing.TB, file string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
	if err != nil {
		tb.Fatal(err)
	}
	return string(raw)
}

const (
	// fullPersona sets every field of the spec validly.
	fullPersona = `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: full
  namespace: team-a
spec:
  description: Every field, set validly.
  model: gpt-5
  harness: codex
  reasoningEffort: high
  harnessPrompt: replace
  streaming: true
  prompt: "Literal {{ .NotATemplate }} text."
  inherit: [base, reviewer-2]
  layers:
    - name: org-rules
    - name: agents.md
  systemPrompt:
    platform:
      waiver: {replace: ""}
      tasks:
        replace: '{{ range .Tasks }}- {{ .ID }} {{ .Subject }} {{ .Status }}{{ if .Conditional }} ({{ .ActivationPattern }}){{ end }}{{ end }}'
      forkPr:
        replace: '{{ range $r := .Repos }}{{ with .BaseRepo }}{{ . }} {{ $r.ForkOwner }}{{ end }}{{ end }}'
      knowledge:
        replace: '{{ with .Knowledge }}{{ if or .Injected .CreationEnabled }}k{{ end }}{{ end }}'
    extensions:
      - id: notes_1
        template: '{{ index .Vars "team" | upper }} {{ include "fragment" . }} {{ quote .AgentRef }}'
      - id: flights
        template: '{{ range .FlightMessages }}{{ .Field }}: {{ .Flight }} {{ .Description }}{{ end }}'
  vars:
    team: a
    a.b: dotted keys are fine
  context:
    workspace: ws
    slug: s
    workspaceDir: /work
    repos:
      - {name: o/r, cloneURL: https://x/o/r.git, dir: /work/r, branch: b, branchCreated: true,
         baseRepo: u/r, baseCloneURL: https://x/u/r.git, baseBranch: main, forkOwner: o}
    gitHubGateway: true
    hasResultSchema: false
    flightMessages: [{field: f, flight: fl, description: d}]
    knowledge: {injected: true, creationEnabled: false}
    expectedOutput: pr
    tasks: [{id: t1, subject: s, status: pending, notApplicableReason: '', conditional: true, activationPattern: '*.go'}]
    userSystemPrompt: u
    appendSystemPrompt: a
  variants:
    - {name: claude-opus, harness: claude, model: claude-opus-4, reasoningEffort: low, harnessPrompt: keep}
    - {name: plain}
status:
  observedGeneration: 1
`
)

// persona is a Persona named p with the given spec (YAML, indented by 2).
func persona(spec string) string {
	return "kind: Persona\nmetadata:\n  name: p\nspec:\n" + spec
}

// extension is a Persona with one extension of the given template.
func extension(tmpl string) string {
	return persona(fmt.Sprintf("  systemPrompt:\n    extensions:\n      - id: notes\n        template: %q\n", tmpl))
}

// platform is a Persona with one platform entry, given as flow YAML.
func platform(key, entry string) string {
	return persona(fmt.Sprintf("  systemPrompt:\n    platform:\n      %s: %s\n", key, entry))
}

func yamlList(prefix string, n int, item func(i int) string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		b.WriteString("\n    - " + item(i))
	}
	return b.String() + "\n"
}

func TestPersonaAccepted(t *testing.T) {
	cases := []testCase{
		{name: "every field", doc: fullPersona},
		{name: "empty spec", doc: persona("  {}\n")},
		{name: "no spec", doc: "kind: Persona\nmetadata: {name: p}\n"},
		{name: "longest name", doc: "kind: Persona\nmetadata: {name: a" + strings.Repeat("b", 62) + "}\n"},
		{name: "empty replace renders to nothing", doc: platform("waiver", "{replace: ''}")},
		{name: "range over a known field", doc: extension("{{ range .Repos }}{{ .Name }}{{ end }}")},
		{name: "with over a string", doc: extension("{{ with .Model }}{{ . }}{{ end }}")},
		{name: "include with a literal name", doc: extension(`{{ include "team-rules" . }}`)},
		{name: "Murmur functions", doc: extension(`{{ quote (lower (trimSpace .Model)) }}{{ if hasPrefix .Model "gpt" }}{{ end }}{{ if contains .Model "o" }}{{ end }}`)},
		{name: "restricted Sprig", doc: extension(`{{ .Model | upper | trunc 3 }}{{ keys (dict "a" 1) | join "," }}`)},
		{name: "define and template", doc: extension(`{{ define "x" }}{{ .Whatever }}{{ end }}{{ template "x" . }}`)},
		{name: "description of 1024 bytes", doc: persona("  description: " + strings.Repeat("é", 512) + "\n")},
		{name: "model and reasoningEffort at their limits, the persona's and a variant's", doc: persona("  model: " + strings.Repeat("m", 253) +
			"\n  reasoningEffort: " + strings.Repeat("x", 64) + "\n  variants: [{name: a, model: " + strings.Repeat("m", 253) + ", reasoningEffort: " + strings.Repeat("x", 64) + "}]\n")},
		{name: "16 inherit entries", doc: persona(yamlList("  inherit:", 16, func(i int) string { return fmt.Sprintf("p%d", i) }))},
		{name: "32 layers", doc: persona(yamlList("  layers:", 32, func(i int) string { return fmt.Sprintf("{name: l%d}", i) }))},
		{name: "16 variants", doc: persona(yamlList("  variants:", 16, func(i int) string { return fmt.Sprintf("{name: v%d}", i) }))},
		{name: "nulls are unset", doc: persona("  model: null\n  systemPrompt:\n    platform:\n      waiver: null\n      tasks: {replace: null, remove: true}\n  vars: {a: null}\n")},
		{name: "template at the source limit", doc: extension(strings.Repeat("x", render.DefaultLimits.MaxSourceBytes))},
	}
	for _, file := range systemPromptSamples {
		cases = append(cases, testCase{name: "seed " + file, doc: sample(t, file)})
	}
	runCases(t, cases, ValidatePersona)
}

func TestPersonaRejected(t *testing.T) {
	const sp = "spec.systemPrompt"
	const ext0 = sp + ".extensions[0]"
	cases := []testCase{
		// metadata.name
		{name: "name with underscore", doc: "kind: Persona\nmetadata: {name: Bad_Name}\n", want: []want{invalid("metadata.name")}},
		{name: "name starting with a digit", doc: "kind: Persona\nmetadata: {name: 1p}\n", want: []want{invalid("metadata.name")}},
		{name: "name too long", doc: "kind: Persona\nmetadata: {name: a" + strings.Repeat("b", 63) + "}\n", want: []want{invalid("metadata.name")}},
		{name: "name ending with a hyphen", doc: "kind: Persona\nmetadata: {name: p-}\n", want: []want{invalid("metadata.name")}},

		// unknown keys anywhere under spec
		{
			name:  "misspelled systemPrompt",
			doc:   persona("  sytemPrompt: {}\n"),
			want:  []want{invalid("spec.sytemPrompt")},
			hints: map[string]string{"spec.sytemPrompt": `unknown field; did you mean "systemPrompt"?`},
		},
		{
			name: "misspelled replce",
			doc:  platform("waiver", "{replce: 'x'}"),
			// The entry also lacks a replace or remove.
			want:  []want{invalid(sp + ".platform.waiver.replce"), required(sp + ".platform.waiver")},
			hints: map[string]string{sp + ".platform.waiver.replce": `unknown field; did you mean "replace"?`},
		},
		{
			name:  "misspelled extension key",
			doc:   persona("  systemPrompt:\n    extensions:\n      - {id: x, template: t, tempalte: t}\n"),
			want:  []want{invalid(ext0 + ".tempalte")},
			hints: map[string]string{ext0 + ".tempalte": `did you mean "template"?`},
		},
		{
			name: "unknown keys deep in context",
			doc:  persona("  context:\n    repos: [{nmae: x}]\n    knowledge: {injectd: true}\n    tasks: [{conditonal: true}]\n    flightMessages: [{feild: f}]\n    gitHubGatway: true\n"),
			want: []want{
				invalid("spec.context.repos[0].nmae"), invalid("spec.context.knowledge.injectd"),
				invalid("spec.context.tasks[0].conditonal"), invalid("spec.context.flightMessages[0].feild"),
				invalid("spec.context.gitHubGatway"),
			},
			hints: map[string]string{
				"spec.context.repos[0].nmae":           `did you mean "name"?`,
				"spec.context.tasks[0].conditonal":     `did you mean "conditional"?`,
				"spec.context.gitHubGatway":            `did you mean "gitHubGateway"?`,
				"spec.context.knowledge.injectd":       `did you mean "injected"?`,
				"spec.context.flightMessages[0].feild": `did you mean "field"?`,
			},
		},
		{
			name:  "unknown variant and layer keys",
			doc:   persona("  variants: [{name: v, modle: m}]\n  layers: [{name: l, nmae: l}]\n"),
			want:  []want{invalid("spec.variants[0].modle"), invalid("spec.layers[0].nmae")},
			hints: map[string]string{"spec.variants[0].modle": `did you mean "model"?`},
		},
		{
			name:  "unknown spec key without a close match",
			doc:   persona("  frobnicate: true\n"),
			want:  []want{invalid("spec.frobnicate")},
			hints: map[string]string{"spec.frobnicate": "known fields: description, model, harness"},
		},
		{
			name:  "key differing in case only",
			doc:   persona("  SystemPrompt: {}\n"),
			want:  []want{invalid("spec.SystemPrompt")},
			hints: map[string]string{"spec.SystemPrompt": `did you mean "systemPrompt"?`},
		},

		// types
		{
			name: "wrong scalar and container types",
			doc: persona("  streaming: 'yes'\n  model: 4\n  inherit: base\n  layers: {name: l}\n  vars: {a: 1, b: true, c: [x]}\n" +
				"  systemPrompt: []\n  context:\n    repos: {name: x}\n    gitHubGateway: 'true'\n    knowledge: {injected: 1}\n    workspace: [a]\n"),
			want: []want{
				invalid("spec.streaming"), invalid("spec.model"), invalid("spec.inherit"), invalid("spec.layers"),
				invalid("spec.vars.a"), invalid("spec.vars.b"), invalid("spec.vars.c"), invalid("spec.systemPrompt"),
				invalid("spec.context.repos"), invalid("spec.context.gitHubGateway"),
				invalid("spec.context.knowledge.injected"), invalid("spec.context.workspace"),
			},
			hints: map[string]string{
				"spec.streaming":     "must be a boolean",
				"spec.model":         "must be a string",
				"spec.inherit":       "must be a list",
				"spec.systemPrompt":  "must be an object",
				"spec.vars.a":        "must be a string",
				"spec.context.repos": "must be a list",
			},
		},
		{name: "spec not an object", doc: "kind: Persona\nmetadata: {name: p}\nspec: [a]\n", want: []want{invalid("spec")}},
		{name: "null list item", doc: persona("  inherit: [a, null]\n  layers: [null]\n"), want: []want{invalid("spec.inherit[1]"), invalid("spec.layers[0]")}},
		{name: "odd vars key is bracketed", doc: persona("  vars: {'a.b': 1}\n"), want: []want{invalid("spec.vars[a.b]")}},

		// description, harness
		{name: "description of 1025 bytes", doc: persona("  description: " + strings.Repeat("x", 1025) + "\n"), want: []want{tooLong("spec.description")}},
		{name: "description of 1026 bytes in 513 characters", doc: persona("  description: " + strings.Repeat("é", 513) + "\n"), want: []want{tooLong("spec.description")}},
		// model, reasoningEffort: a real value never comes near the limit; a
		// value of 920 KB would crowd a guardrail out of the ConfigMap.
		{name: "model of 920 KB", doc: persona("  model: " + strings.Repeat("m", 920_000) + "\n"), want: []want{tooLong("spec.model")}},
		{name: "model of 254 bytes", doc: persona("  model: " + strings.Repeat("m", 254) + "\n"), want: []want{tooLong("spec.model")}},
		{name: "reasoningEffort of 65 bytes", doc: persona("  reasoningEffort: " + strings.Repeat("x", 65) + "\n"), want: []want{tooLong("spec.reasoningEffort")}},
		{
			name: "a variant's model and reasoningEffort over their limits",
			doc:  persona("  variants: [{name: a, model: " + strings.Repeat("m", 254) + ", reasoningEffort: " + strings.Repeat("x", 65) + "}]\n"),
			want: []want{tooLong("spec.variants[0].model"), tooLong("spec.variants[0].reasoningEffort")},
		},
		{name: "unknown harness", doc: persona("  harness: gemini\n"), want: []want{notSupported("spec.harness")}},
		{name: "empty harness", doc: persona("  harness: ''\n"), want: []want{notSupported("spec.harness")}},
		{
			name:  "unknown harnessPrompt, the persona's and a variant's",
			doc:   persona("  harnessPrompt: append\n  variants: [{name: a, harnessPrompt: Replace}, {name: b, harnessPrompt: ''}]\n"),
			want:  []want{notSupported("spec.harnessPrompt"), notSupported("spec.variants[0].harnessPrompt"), notSupported("spec.variants[1].harnessPrompt")},
			hints: map[string]string{"spec.harnessPrompt": `supported values: "keep", "replace"`},
		},

		// inherit
		{name: "17 inherit entries", doc: persona(yamlList("  inherit:", 17, func(i int) string { return fmt.Sprintf("p%d", i) })), want: []want{tooMany("spec.inherit")}},
		{name: "bad inherit names", doc: persona("  inherit: [Base, base_2, '', ok]\n"), want: []want{invalid("spec.inherit[0]"), invalid("spec.inherit[1]"), invalid("spec.inherit[2]")}},

		// layers
		{name: "33 layers", doc: persona(yamlList("  layers:", 33, func(i int) string { return fmt.Sprintf("{name: l%d}", i) })), want: []want{tooMany("spec.layers")}},
		{name: "layer without a name", doc: persona("  layers: [{}, {name: ''}]\n"), want: []want{required("spec.layers[0].name"), required("spec.layers[1].name")}},
		{name: "layer name not a subdomain", doc: persona("  layers: [{name: Bad_Layer}, {name: -x}]\n"), want: []want{invalid("spec.layers[0].name"), invalid("spec.layers[1].name")}},

		// platform
		{
			name:  "platform key outside the catalog",
			doc:   platform("prMergability", "{remove: true}"),
			want:  []want{notSupported(sp + ".platform.prMergability")},
			hints: map[string]string{sp + ".platform.prMergability": `not a platform section; did you mean "prMergeability"?`},
		},
		{
			name:  "platform key with no close match",
			doc:   platform("banner", "{remove: true}"),
			want:  []want{notSupported(sp + ".platform.banner")},
			hints: map[string]string{sp + ".platform.banner": "the sections are: persona, workspace, gitPush"},
		},
		{name: "remove: false", doc: platform("waiver", "{remove: false}"), want: []want{invalid(sp + ".platform.waiver.remove")}, hints: map[string]string{sp + ".platform.waiver.remove": "leave the key unset to inherit"}},
		{name: "both replace and remove", doc: platform("waiver", "{replace: x, remove: true}"), want: []want{forbidden(sp + ".platform.waiver.remove")}},
		{name: "both, with remove: false", doc: platform("waiver", "{replace: x, remove: false}"), want: []want{forbidden(sp + ".platform.waiver.remove"), invalid(sp + ".platform.waiver.remove")}},
		{name: "neither replace nor remove", doc: platform("waiver", "{}"), want: []want{required(sp + ".platform.waiver")}},
		{name: "remove as a string", doc: platform("waiver", "{remove: 'true'}"), want: []want{invalid(sp + ".platform.waiver.remove")}},
		{name: "entry not an object", doc: platform("waiver", "true"), want: []want{invalid(sp + ".platform.waiver")}},
		{name: "platform not an object", doc: persona("  systemPrompt:\n    platform: [waiver]\n"), want: []want{invalid(sp + ".platform")}},
		{
			name:  "replace that names a missing field",
			doc:   platform("workspace", "{replace: '{{ .Nope }}'}"),
			want:  []want{invalid(sp + ".platform.workspace.replace")},
			hints: map[string]string{sp + ".platform.workspace.replace": "platform.workspace"},
		},
		{name: "replace that does not parse", doc: platform("workspace", "{replace: '{{ if .Repos }}'}"), want: []want{invalid(sp + ".platform.workspace.replace")}},
		{name: "replace over the source limit", doc: platform("workspace", "{replace: "+strings.Repeat("x", render.DefaultLimits.MaxSourceBytes+1)+"}"), want: []want{tooLong(sp + ".platform.workspace.replace")}},

		// extensions
		{name: "extension id Bad-ID", doc: persona("  systemPrompt:\n    extensions: [{id: Bad-ID, template: t}]\n"), want: []want{invalid(ext0 + ".id")}},
		{name: "extension id too long", doc: persona("  systemPrompt:\n    extensions: [{id: a" + strings.Repeat("b", 63) + ", template: t}]\n"), want: []want{invalid(ext0 + ".id")}},
		{name: "extension without id and template", doc: persona("  systemPrompt:\n    extensions: [{}]\n"), want: []want{required(ext0 + ".id"), required(ext0 + ".template")}},
		{name: "extension with empty id", doc: persona("  systemPrompt:\n    extensions: [{id: '', template: t}]\n"), want: []want{required(ext0 + ".id")}},
		{
			name: "duplicate extension ids",
			doc:  persona("  systemPrompt:\n    extensions: [{id: a, template: t}, {id: b, template: t}, {id: a, template: t}, {id: a, template: t}]\n"),
			want: []want{duplicate(sp + ".extensions[2].id"), duplicate(sp + ".extensions[3].id")},
		},
		{name: "empty extension template", doc: extension(""), want: []want{required(ext0 + ".template")}},
		{name: "extension not an object", doc: persona("  systemPrompt:\n    extensions: [notes]\n"), want: []want{invalid(ext0)}},
		{name: "extensions not a list", doc: persona("  systemPrompt:\n    extensions: {id: a}\n"), want: []want{invalid(sp + ".extensions")}},
		{
			name:  "field that does not exist",
			doc:   extension("{{ .Nope }}"),
			want:  []want{invalid(ext0 + ".template")},
			hints: map[string]string{ext0 + ".template": "extension.notes"},
		},
		{
			name:  "misspelled field inside range",
			doc:   extension("{{ range .Repos }}{{ .Nmae }}{{ end }}"),
			want:  []want{invalid(ext0 + ".template")},
			hints: map[string]string{ext0 + ".template": "Name"},
		},
		{name: "field of a string inside with", doc: extension("{{ with .Model }}{{ .Name }}{{ end }}"), want: []want{invalid(ext0 + ".template")}},
		{name: "include with a computed name", doc: extension("{{ include .Name . }}"), want: []want{invalid(ext0 + ".template")}},
		{name: "env is not in the function set", doc: extension(`{{ env "HOME" }}`), want: []want{invalid(ext0 + ".template")}},
		{name: "now is not in the function set", doc: extension(`{{ now }}`), want: []want{invalid(ext0 + ".template")}},
		{name: "randAlpha is not in the function set", doc: extension(`{{ randAlpha 3 }}`), want: []want{invalid(ext0 + ".template")}},
		{name: "undefined template", doc: extension(`{{ template "missing" . }}`), want: []want{invalid(ext0 + ".template")}},
		{name: "extension template over the source limit", doc: extension(strings.Repeat("x", render.DefaultLimits.MaxSourceBytes+1)), want: []want{tooLong(ext0 + ".template")}},

		// variants
		{name: "17 variants", doc: persona(yamlList("  variants:", 17, func(i int) string { return fmt.Sprintf("{name: v%d}", i) })), want: []want{tooMany("spec.variants")}},
		{
			name: "bad variants",
			doc:  persona("  variants: [{harness: claude}, {name: Fast}, {name: a, harness: gpt}, {name: a}]\n"),
			want: []want{
				required("spec.variants[0].name"), invalid("spec.variants[1].name"),
				notSupported("spec.variants[2].harness"), duplicate("spec.variants[3].name"),
			},
		},
	}
	runCases(t, cases, ValidatePersona)
}

// TestPersonaCollectsEverything checks that one object with many problems
// reports all of them, not the first.
func TestPersonaCollectsEverything(t *testing.T) {
	doc := `
kind: Persona
metadata: {name: Bad}
sepc: {}
spec:
  description: ` + strings.Repeat("x", 2000) + `
  harness: gpt
  inherit: [A]
  sytemPrompt: {}
  systemPrompt:
    platform:
      prMergability: {remove: true}
      waiver: {remove: false}
    extensions:
      - {id: Bad-ID, template: '{{ env "HOME" }}'}
      - {id: ok, template: ''}
`
	assertErrors(t, ValidatePersona(decode(t, doc)), []want{
		invalid("metadata.name"), invalid("sepc"), tooLong("spec.description"),
		notSupported("spec.harness"), invalid("spec.inherit[0]"), invalid("spec.sytemPrompt"),
		notSupported("spec.systemPrompt.platform.prMergability"), invalid("spec.systemPrompt.platform.waiver.remove"),
		invalid("spec.systemPrompt.extensions[0].id"), invalid("spec.systemPrompt.extensions[0].template"),
		required("spec.systemPrompt.extensions[1].template"),
	})
}

// TestPersonaDeterministic checks that errors come out in the same order
// on every run, whatever the map iteration order.
func TestPersonaDeterministic(t *testing.T) {
	doc := persona("  a: 1\n  b: 2\n  c: 3\n  systemPrompt:\n    platform: {x: {}, y: {}, z: {}, waiver: {}}\n  vars: {p: 1, q: 2, r: 3}\n")
	first := describe(ValidatePersona(decode(t, doc)))
	for range 20 {
		if got := describe(ValidatePersona(decode(t, doc))); got != first {
			t.Fatalf("order changed:\n%s\nthen:\n%s", first, got)
		}
	}
}

func TestPersonaRevisionHistoryLimit(t *testing.T) {
	runCases(t, []testCase{
		{name: "no snapshots kept", doc: persona("  revisionHistoryLimit: 0\n")},
		{name: "the most kept", doc: persona("  revisionHistoryLimit: 20\n")},
	}, ValidatePersona)
	for _, limit := range []string{"21", "-1"} {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(persona("  revisionHistoryLimit: "+limit+"\n")), &obj); err != nil {
			t.Fatal(err)
		}
		errs := ValidatePersona(obj)
		if len(errs) != 1 || errs[0].Field != "spec.revisionHistoryLimit" {
			t.Errorf("revisionHistoryLimit %s: errors %v, want one on spec.revisionHistoryLimit", limit, errs)
		}
	}
}

func TestPersonaPinRevision(t *testing.T) {
	doc := func(value string) map[string]any {
		var obj map[string]any
		text := "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata:\n  name: p\n  annotations:\n    prompts.persona-operator.dev/pin-revision: " + value + "\nspec:\n  description: d\n"
		if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	for _, ok := range []string{`"1"`, `"37"`} {
		if errs := ValidatePersona(doc(ok)); len(errs) != 0 {
			t.Errorf("pin %s: %v, want none", ok, errs)
		}
	}
	for _, bad := range []string{`"0"`, `"-3"`, `"two"`, `""`, `"1.5"`, `"+2"`} {
		errs := ValidatePersona(doc(bad))
		if len(errs) != 1 || errs[0].Field != "metadata.annotations[prompts.persona-operator.dev/pin-revision]" {
			t.Errorf("pin %s: errors %v, want one on metadata.annotations[prompts.persona-operator.dev/pin-revision]", bad, errs)
		}
	}
}
