package admission

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// guardrail is a ClusterPromptLayer named no-push with the given spec (YAML,
// indented by 2).
func guardrail(spec string) string {
	return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: ClusterPromptLayer\nmetadata:\n  name: no-push\nspec:\n" + spec
}

func TestClusterPromptLayerAccepted(t *testing.T) {
	cases := []testCase{
		{name: "every field", doc: guardrail(`  description: Changes reach main only through review.
  position: first
  template: 'Never push to {{ range .Repos }}{{ .BaseBranch }} {{ end }}directly ({{ .Persona.Name }}).'
  namespaceSelector:
    matchLabels: {prompts.persona-operator.dev/guardrails: standard}
    matchExpressions:
      - {key: tier, operator: In, values: [prod, staging]}
      - {key: kubernetes.io/metadata.name, operator: NotIn, values: [sandbox]}
  personaSelector:
    matchExpressions:
      - {key: opt-in/review, operator: Exists}
      - {key: legacy, operator: DoesNotExist}
`)},
		{name: "defaults", doc: guardrail("  template: x\n")},
		{name: "position last", doc: guardrail("  position: last\n  template: x\n")},
		{name: "position final", doc: guardrail("  position: final\n  template: x\n")},
		{name: "empty template", doc: guardrail("  template: ''\n")},
		{name: "empty selectors select everything", doc: guardrail("  template: x\n  namespaceSelector: {}\n  personaSelector: {matchLabels: {}, matchExpressions: []}\n")},
		{name: "null selectors are unset", doc: guardrail("  template: x\n  namespaceSelector: null\n  personaSelector: null\n")},
		{name: "a defined template is not an include", doc: guardrail("  template: '{{ define \"rule\" }}Open a pull request.{{ end }}{{ template \"rule\" . }}'\n")},
		{name: "subdomain name", doc: "kind: ClusterPromptLayer\nmetadata: {name: org.no-push}\nspec: {template: x}\n"},
		{name: "status is allowed", doc: guardrail("  template: x\n") + "status: {observedGeneration: 1, conditions: []}\n"},
		{name: "description at the limit", doc: guardrail("  description: " + strings.Repeat("d", maxDescriptionBytes) + "\n  template: x\n")},
		{name: "template at the source limit", doc: guardrail("  template: " + strings.Repeat("x", render.DefaultLimits.MaxSourceBytes) + "\n")},
		{name: "sample", doc: sample(t, "cluster_prompts_v1alpha1_clusterpromptlayer.yaml")},
	}
	runCases(t, cases, ValidateClusterPromptLayer)
}

func TestClusterPromptLayerRejected(t *testing.T) {
	const ns = "spec.namespaceSelector"
	const ps = "spec.personaSelector"
	cases := []testCase{
		{
			name:  "include",
			doc:   guardrail("  template: '{{ include \"org-policy\" . }}'\n"),
			want:  []want{forbidden("spec.template")},
			hints: map[string]string{"spec.template": `include is not allowed in a ClusterPromptLayer (it includes "org-policy")`},
		},
		{
			name:  "includes, piped and nested",
			doc:   guardrail("  template: '{{ if .Streaming }}{{ . | include \"a\" }}{{ end }}{{ include \"b\" . | upper }}'\n"),
			want:  []want{forbidden("spec.template")},
			hints: map[string]string{"spec.template": `"a", "b"`},
		},
		{
			name:  "a computed include",
			doc:   guardrail("  template: '{{ include .Slug . }}'\n"),
			want:  []want{invalid("spec.template")},
			hints: map[string]string{"spec.template": "include takes a literal layer name"},
		},
		{
			name: "an include and a missing field",
			doc:  guardrail("  template: '{{ include \"a\" . }}{{ .Nope }}'\n"),
			want: []want{forbidden("spec.template"), invalid("spec.template")},
		},
		{
			name:  "template not parsing",
			doc:   guardrail("  template: '{{ if .Streaming }}unclosed'\n"),
			want:  []want{invalid("spec.template")},
			hints: map[string]string{"spec.template": "clusterlayer.no-push"},
		},
		{
			name:  "a field chain that does not exist",
			doc:   guardrail("  template: '{{ range .Repos }}{{ .Nmae }}{{ end }}'\n"),
			want:  []want{invalid("spec.template")},
			hints: map[string]string{"spec.template": "did you mean Name?"},
		},
		{name: "a function outside the set", doc: guardrail("  template: '{{ env \"HOME\" }}'\n"), want: []want{invalid("spec.template")}},
		{name: "template over the source limit", doc: guardrail("  template: " + strings.Repeat("x", render.DefaultLimits.MaxSourceBytes+1) + "\n"), want: []want{tooLong("spec.template")}},
		{name: "description over the limit", doc: guardrail("  description: " + strings.Repeat("d", maxDescriptionBytes+1) + "\n  template: x\n"), want: []want{tooLong("spec.description")}},
		{name: "no template", doc: guardrail("  position: first\n"), want: []want{required("spec.template")}},
		{name: "no spec", doc: "kind: ClusterPromptLayer\nmetadata: {name: no-push}\n", want: []want{required("spec.template")}},
		{name: "template not a string", doc: guardrail("  template: [x]\n"), want: []want{invalid("spec.template")}},
		{name: "bad position", doc: guardrail("  position: middle\n  template: x\n"), want: []want{notSupported("spec.position")}},
		{name: "empty position", doc: guardrail("  position: ''\n  template: x\n"), want: []want{notSupported("spec.position")}},
		{name: "name not a subdomain", doc: "kind: ClusterPromptLayer\nmetadata: {name: No_Push}\nspec: {template: x}\n", want: []want{invalid("metadata.name")}},
		{
			name:  "a PromptLayer's key",
			doc:   guardrail("  mode: append\n  template: x\n"),
			want:  []want{invalid("spec.mode")},
			hints: map[string]string{"spec.mode": "unknown field"},
		},
		{
			name:  "misspelled selector key",
			doc:   guardrail("  template: x\n  namespaceSelector: {matchLabel: {team: a}}\n"),
			want:  []want{invalid(ns + ".matchLabel")},
			hints: map[string]string{ns + ".matchLabel": `did you mean "matchLabels"?`},
		},
		{
			name: "unknown key in a requirement",
			doc:  guardrail("  template: x\n  personaSelector: {matchExpressions: [{key: a, operator: In, value: [b]}]}\n"),
			// value is unknown, so values is empty, which In does not allow.
			want: []want{invalid(ps + ".matchExpressions[0].value"), required(ps + ".matchExpressions[0].values")},
		},
		{
			name:  "bad operator",
			doc:   guardrail("  template: x\n  namespaceSelector: {matchExpressions: [{key: tier, operator: Equals, values: [prod]}]}\n"),
			want:  []want{invalid(ns + ".matchExpressions[0].operator")},
			hints: map[string]string{ns + ".matchExpressions[0].operator": "not a valid selector operator"},
		},
		{
			name: "In without values, Exists with values",
			doc:  guardrail("  template: x\n  namespaceSelector: {matchExpressions: [{key: a, operator: In}, {key: b, operator: Exists, values: [x]}]}\n"),
			want: []want{required(ns + ".matchExpressions[0].values"), forbidden(ns + ".matchExpressions[1].values")},
		},
		{
			name: "requirement without key and operator",
			doc:  guardrail("  template: x\n  personaSelector: {matchExpressions: [{}]}\n"),
			// An empty key breaks two rules of a label key: non-empty, and the pattern.
			want: []want{invalid(ps + ".matchExpressions[0].key"), invalid(ps + ".matchExpressions[0].key"), invalid(ps + ".matchExpressions[0].operator")},
		},
		{
			name: "bad label key and value",
			doc:  guardrail("  template: x\n  namespaceSelector: {matchLabels: {'bad key': ok, team: 'not valid!'}}\n"),
			want: []want{invalid(ns + ".matchLabels[bad key]"), invalid(ns + ".matchLabels.team")},
		},
		{
			name: "a label value not a string",
			doc:  guardrail("  template: x\n  namespaceSelector: {matchLabels: {team: 1}}\n"),
			want: []want{invalid(ns + ".matchLabels.team")},
		},
		{name: "selector not an object", doc: guardrail("  template: x\n  personaSelector: team=a\n"), want: []want{invalid(ps)}},
		{name: "spec not an object", doc: "kind: ClusterPromptLayer\nmetadata: {name: no-push}\nspec: x\n", want: []want{invalid("spec")}},
		{
			name: "every problem at once",
			doc: "kind: ClusterPromptLayer\nmetadata: {name: No_Push}\nspec:\n  position: up\n  template: '{{ include \"a\" . }}'\n" +
				"  namespaceSelector: {matchExpressions: [{key: a, operator: Is}]}\n  extra: 1\n",
			want: []want{invalid("metadata.name"), notSupported("spec.position"), forbidden("spec.template"),
				invalid(ns + ".matchExpressions[0].operator"), invalid("spec.extra")},
		},
	}
	runCases(t, cases, ValidateClusterPromptLayer)
}
