package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kustomizeConfig teaches kustomize that a PromptLayer's templateFrom names
// a ConfigMap, so that it gives the reference the generated name's hash
// suffix too (docs/cli.md#kustomize).
const kustomizeConfig = `nameReference:
- kind: ConfigMap
  version: v1
  fieldSpecs:
  - kind: PromptLayer
    group: prompts.persona-operator.dev
    path: spec/templateFrom/configMapKeyRef/name
`

const agentsLayer = "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: agents}\nspec:\n  templateFrom:\n    configMapKeyRef: {name: repo-docs, key: AGENTS.md}\n"

// overlayTree writes a base whose configMapGenerator makes the ConfigMap a
// PromptLayer's templateFrom reads, and an overlay that replaces it.
// baseExtra is added to the base's kustomization.
func overlayTree(t *testing.T, baseExtra string) (base, overlay string) {
	dir := t.TempDir()
	base = files(t, filepath.Join(dir, "base"),
		"kustomization.yaml", "resources: [personas.yaml]\nconfigMapGenerator:\n- name: repo-docs\n  files: [AGENTS.md]\n  options:\n    labels: {prompts.persona-operator.dev/template-source: \"true\"}\n"+baseExtra,
		"kustomizeconfig.yaml", kustomizeConfig,
		"AGENTS.md", "# Agents\nRun make test.\n",
		"personas.yaml", docs(agentsLayer, barePersona("reviewer", "  layers: [{name: agents}]\n", "a", "Review.")),
	)
	overlay = files(t, filepath.Join(dir, "overlays", "prod"),
		"kustomization.yaml", "resources: [../../base]\nconfigMapGenerator:\n- name: repo-docs\n  behavior: replace\n  files: [AGENTS.md]\n  options:\n    labels: {prompts.persona-operator.dev/template-source: \"true\"}\n",
		"AGENTS.md", "# Agents\nRun make test-all.\n",
	)
	return base, overlay
}

func TestKustomizeOverlay(t *testing.T) {
	base, overlay := overlayTree(t, "configurations: [kustomizeconfig.yaml]\n")

	// The persona's extension, then the package layer the overlay's
	// generated ConfigMap holds.
	run(t, "", "render", "-k", overlay).expect(t, 0, "Review.\n\n# Agents\nRun make test-all.\n")
	run(t, "", "render", "-k", base).expect(t, 0, "Review.\n\n# Agents\nRun make test.\n")
	run(t, "", "validate", "-k", overlay).expect(t, 0, "1 Persona, 1 PromptLayer, 1 ConfigMap: valid\n")
	run(t, "", "diff", "-k", overlay, "--against-k", base).expect(t, DiffFound,
		"persona default/reviewer system-prompt.md\n"+
			"--- old/default/reviewer/system-prompt.md\n+++ new/default/reviewer/system-prompt.md\n"+
			"@@ -1,4 +1,4 @@\n Review.\n \n # Agents\n-Run make test.\n+Run make test-all.\n")
	run(t, "", "diff", "-k", overlay, "--against-k", overlay).expect(t, DiffNone, "")
}

// Without the nameReference configuration, the generated ConfigMap's name
// has a hash suffix that the PromptLayer's reference lacks.
func TestKustomizeWithoutNameReference(t *testing.T) {
	_, overlay := overlayTree(t, "")
	r := run(t, "", "validate", "-k", overlay)
	r.expect(t, 1, r.stdout)
	// Each problem names the file of the base the object came from, and
	// the generated name the reference lacks its suffix for.
	personas := regexp.QuoteMeta(filepath.Join(overlay, "..", "..", "base", "personas.yaml"))
	hint := `; did you mean "repo-docs-[a-z0-9]{10}"\? kustomize's configMapGenerator adds a hash of the content to the name and rewrites only the references it knows: ` +
		`teach it templateFrom with a nameReference configuration \(docs/cli\.md#kustomize\), or set generatorOptions\.disableNameSuffixHash`
	want := regexp.MustCompile(`^` + personas + `:1 PromptLayer/agents: spec\.templateFrom\.configMapKeyRef\.name: ConfigMap "repo-docs" \(referenced by layer "agents"\) not found` + hint + "\n" +
		personas + `:2 Persona/reviewer: spec\.layers\[0\]: ConfigMap "repo-docs" \(referenced by layer "agents"\) not found` + hint + "\n$")
	if !want.MatchString(r.stdout) {
		t.Errorf("validate -k:\n%s", r.stdout)
	}

	// Or the generator keeps the name as it is.
	_, overlay = overlayTree(t, "generatorOptions: {disableNameSuffixHash: true}\n")
	run(t, "", "render", "-k", overlay).expect(t, 0, "Review.\n\n# Agents\nRun make test-all.\n")
}

// -f and -k combine into one set: a platform directory beside a team's
// kustomization, checked and rendered together.
func TestKustomizeWithManifests(t *testing.T) {
	base, _ := overlayTree(t, "configurations: [kustomizeconfig.yaml]\n")
	platform := files(t, t.TempDir(), "guardrail.yaml",
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: ClusterPromptLayer\nmetadata: {name: final-word}\nspec:\n  position: final\n  template: Stop at the first failure.\n")
	run(t, "", "validate", "-k", base, "-f", platform).expect(t, 0, "1 Persona, 1 PromptLayer, 1 ClusterPromptLayer, 1 ConfigMap: valid\n")
	run(t, "", "render", "-f", platform, "-k", base).expect(t, 0, "Review.\n\n# Agents\nRun make test.\n\nStop at the first failure.\n")
	r := run(t, "", "validate", "-k", filepath.Join(base, "nope"))
	r.expect(t, 1, "")
	if !strings.Contains(r.stderr, "the kustomization "+filepath.Join(base, "nope")+" does not build") {
		t.Errorf("stderr = %s", r.stderr)
	}
}

// A renamed object is found in its file by the name it is written with.
func TestKustomizeOriginOfRenamedObject(t *testing.T) {
	dir := files(t, t.TempDir(),
		"kustomization.yaml", "namePrefix: prod-\nresources: [manifests/personas.yaml]\n",
		"manifests/personas.yaml", docs(barePersona("base", "", "a", "A."), persona("reviewer", "  modle: x")),
	)
	r := run(t, "", "validate", "-k", dir)
	r.expect(t, ExitInvalid, filepath.Join(dir, "manifests", "personas.yaml")+`:2 Persona/prod-reviewer: spec.modle: Invalid value: "modle": unknown field; did you mean "model"?`+"\n")
}

// Offline, what the manifests lack of the cluster's inputs is named once: the
// PromptPlatform, and the Namespace a namespace-selecting guardrail needs.
func TestOfflineInputWarnings(t *testing.T) {
	p := files(t, t.TempDir(), "persona.yaml", barePersona("reviewer", "", "a", "Review."))
	guardrail := files(t, t.TempDir(), "guardrail.yaml",
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: ClusterPromptLayer\nmetadata: {name: standard}\nspec:\n  position: final\n  namespaceSelector: {matchLabels: {guardrails: standard}}\n  template: Stop at the first failure.\n")
	platform := files(t, t.TempDir(), "platform.yaml",
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptPlatform\nmetadata: {name: default}\nspec: {}\n")
	namespace := files(t, t.TempDir(), "namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {guardrails: standard}}\n")
	noNamespace := "Warning: ClusterPromptLayer standard selects by namespace labels, and the manifests hold no Namespace team-a: it is rendered as if 1 namespace had no labels; add the Namespace to the manifests, or read it with --cluster-inputs\n"
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"the team's directory alone", []string{"render", "-n", "team-a", "-f", p}, noPlatformWarning},
		{"with the guardrail, without its Namespace", []string{"validate", "-n", "team-a", "-f", p, "-f", guardrail, "-f", platform}, noNamespace},
		{"with everything", []string{"diff", "-n", "team-a", "-f", p, "-f", guardrail, "-f", platform, "-f", namespace, "--against", p}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rawRun("", tt.args...)
			if tt.stderr == "" && r.stderr != "" || !strings.HasPrefix(r.stderr, tt.stderr) || strings.Count(r.stderr, "Warning:") != min(1, len(tt.stderr)) {
				t.Errorf("stderr =\n%s\nwant it to start with\n%s", r.stderr, tt.stderr)
			}
		})
	}
}
