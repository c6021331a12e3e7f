package render

import (
	"bytes"
	"maps"
	"testing"
	"text/template"
	"time"
)

// benchEngine is the default engine with a wall-time budget that a loaded
// machine cannot exhaust: a benchmark measures speed, and checking the
// clock costs the same whatever the budget.
var benchEngine = func() *Engine {
	l := DefaultLimits
	l.MaxDuration = time.Minute
	return NewEngine(l)
}()

// typicalBundle is a typical persona as resolved: every default platform
// section (two of them overridden by its two parents), three extensions,
// three layers, and a realistic turn context.
func typicalBundle() *Bundle {
	sections := DefaultSections()
	for i := range sections {
		switch sections[i].Key {
		case "prMergeability":
			sections[i] = Section{Key: "prMergeability", Origin: "persona/base", Template: `{{ if eq .Harness "claude" }}Check mergeability after opening the PR.{{ end }}`}
		case "workspace":
			sections[i] = Section{Key: "workspace", Origin: "persona/team", Template: "{{ if .Repos }}Repos: {{ range .Repos }}{{ .Name }} at {{ .Dir }} ({{ .Branch }}); {{ end }}{{ end }}\n"}
		}
	}
	return &Bundle{
		Version: BundleVersion,
		Persona: PersonaFields{Name: "reviewer", Namespace: "agents", Prompt: "You are Aura, a coding assistant.\n\n## Critical Rules\n1. Complete every task before stopping.\n\nReview the diff for correctness and style.", Model: "claude-sonnet-4-6", Harness: "claude"},
		Vars:    map[string]string{"team": "platform", "style": "terse"},
		Context: Context{
			WorkspaceDir: new("/workspace"),
			Repos: []Repo{
				{Name: "acme/api", CloneURL: "https://git.example/acme/api", Dir: "/workspace/api", Branch: "agent/fix-1", BranchCreated: true},
				{Name: "acme/web", CloneURL: "https://git.example/me/web", Dir: "/workspace/web", Branch: "agent/fix-1", BaseRepo: "acme/web", BaseBranch: "main", ForkOwner: "me"},
			},
			GitHubGateway:  new(true),
			FlightMessages: []FlightMessage{{Field: "summary", Flight: "status", Description: "one-line status"}, {Field: "risk", Flight: "review", Description: "risk level"}},
			Knowledge:      &Knowledge{Injected: true},
			ExpectedOutput: new("pr"),
			Tasks: []Task{
				{ID: "tests", Subject: "Run the tests", Status: "pending"},
				{ID: "lint", Subject: "Run the linter", Status: "pending", Conditional: true, ActivationPattern: "*.go"},
				{ID: "docs", Subject: "Update the docs", Status: "not_applicable", NotApplicableReason: "no user-facing change"},
			},
		},
		Sections: sections,
		Extensions: []Extension{
			{ID: "harness_notes", Origin: "persona/base", Template: "{{if eq .Harness \"codex\"}}Run the test suite before every commit.{{end}}\n"},
			{ID: "model_notes", Origin: "persona/team", Template: "Model family: {{with .ModelFamily}}{{.}}{{else}}unknown{{end}}.\n{{if eq .ModelFamily \"haiku\"}}Favor small, incremental edits over large rewrites.{{end}}\n"},
			{ID: "team", Origin: "persona/reviewer", Template: "Team: {{ index .Vars \"team\" }}. Style: {{ index .Vars \"style\" | upper }}.\n"},
		},
		Layers: []Layer{
			{Name: "org-policy", Source: "user", Mode: "append", Template: "Follow the organization's security policy."},
			{Name: "agents-md", Source: "app", Mode: "append", Template: "Project rules for {{ .Workspace }}: keep commits small."},
			{Name: "run-note", Source: "run", Mode: "append", Template: "{{ if .Streaming }}Streaming session.{{ else }}Autonomous turn.{{ end }}"},
		},
	}
}

// BenchmarkRenderTypical renders the typical persona's system prompt.
func BenchmarkRenderTypical(b *testing.B) {
	bundle := typicalBundle()
	e := benchEngine
	if _, err := e.Render(bundle, ""); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Render(bundle, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderTypicalFloor is the floor of BenchmarkRenderTypical: the
// same templates, parsed beforehand, executed with bare text/template into
// one buffer, with no budget, normalization or composition.
func BenchmarkRenderTypicalFloor(b *testing.B) {
	bundle := typicalBundle()
	funcs := template.FuncMap{}
	maps.Copy(funcs, sprigFuncs)
	maps.Copy(funcs, murmurFuncs)
	var sources []string
	for _, s := range bundle.Sections {
		sources = append(sources, s.Template)
	}
	for _, x := range bundle.Extensions {
		sources = append(sources, x.Template)
	}
	for _, l := range bundle.Layers {
		sources = append(sources, l.Template)
	}
	templates := make([]*template.Template, len(sources))
	for i, src := range sources {
		templates[i] = template.Must(template.New("t").Funcs(funcs).Parse(src))
	}
	data := newData(bundle, nil)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		for _, t := range templates {
			if err := t.Execute(&buf, data); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkConfigMapTypical renders everything the operator writes for the
// typical persona: the prompt, persona.md, bundle.json and the hash.
func BenchmarkConfigMapTypical(b *testing.B) {
	bundle := typicalBundle()
	e := benchEngine
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.ConfigMap(bundle); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTypicalBundleRenders(t *testing.T) {
	p, err := Default().Render(typicalBundle(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pieces) < 20 {
		t.Errorf("only %d pieces", len(p.Pieces))
	}
}

// BenchmarkRenderBundleTurn is what `kubectl-persona render --bundle
// --context` does per turn in an agent pod once its files are read: decode
// bundle.json, apply the turn context, render.
func BenchmarkRenderBundleTurn(b *testing.B) {
	raw, err := MarshalBundle(typicalBundle())
	if err != nil {
		b.Fatal(err)
	}
	turn := &Turn{Model: new("claude-haiku-4-5"), Context: Context{ExpectedOutput: new("push"), Tasks: []Task{{ID: "t", Subject: "s", Status: "pending"}}}}
	e := benchEngine
	b.ReportAllocs()
	for b.Loop() {
		bundle, err := UnmarshalBundle(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Render(bundle.WithTurn(turn), ""); err != nil {
			b.Fatal(err)
		}
	}
}
