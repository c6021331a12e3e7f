package admission

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// typicalPersona is the typical persona of the render benchmarks as a
// manifest: two parents, three layers, three extensions, two overrides and
// a turn context.
const typicalPersona = `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: reviewer
  namespace: agents
spec:
  description: Reviews pull requests.
  inherit: [base, team]
  model: claude-sonnet-4-6
  harness: claude
  layers: [{name: org-policy}, {name: agents-md}, {name: run-note}]
  prompt: |
    Review the diff for correctness and style.
  systemPrompt:
    platform:
      prMergeability:
        replace: '{{ if eq .Harness "claude" }}Check mergeability after opening the PR.{{ end }}'
      workspace:
        replace: |
          {{ if .Repos }}Repos: {{ range .Repos }}{{ .Name }} at {{ .Dir }} ({{ .Branch }}); {{ end }}{{ end }}
    extensions:
      - id: harness_notes
        template: '{{if eq .Harness "codex"}}Run the test suite before every commit.{{end}}'
      - id: model_notes
        template: |
          Model family: {{with .ModelFamily}}{{.}}{{else}}unknown{{end}}.
          {{if eq .ModelFamily "haiku"}}Favor small, incremental edits over large rewrites.{{end}}
      - id: team
        template: 'Team: {{ index .Vars "team" }}. Style: {{ index .Vars "style" | upper }}.'
  vars: {team: platform, style: terse}
  context:
    workspaceDir: /workspace
    repos:
      - {name: acme/api, dir: /workspace/api, branch: agent/fix-1, branchCreated: true}
      - {name: acme/web, dir: /workspace/web, branch: agent/fix-1, baseRepo: acme/web, baseBranch: main, forkOwner: me}
    gitHubGateway: true
    flightMessages: [{field: summary, flight: status, description: one-line status}]
    knowledge: {injected: true}
    expectedOutput: pr
    tasks:
      - {id: tests, subject: Run the tests, status: pending}
  variants:
    - {name: codex, harness: codex}
`

// BenchmarkValidateTypical is the admission check of the typical persona,
// as the webhook runs it on every create and update.
func BenchmarkValidateTypical(b *testing.B) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(typicalPersona), &obj); err != nil {
		b.Fatal(err)
	}
	if errs := Validate(obj); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		if errs := Validate(obj); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
