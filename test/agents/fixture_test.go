package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// The texts of the suite's Persona, each with a marker that the model stub's
// requests are searched for.
const (
	personaBody = "You review pull requests for correctness first, style second.\n" +
		"PERSONA-BODY-7f3a: cite the line you comment on."
	agentsMD       = "# Project rules\nAGENTS-MD-5c1e: keep commits small and run make test before pushing.\n"
	agentsMDMarker = "AGENTS-MD-5c1e"
	lastGuardrail  = "LAST-GUARDRAIL-31d0: never push to the default branch; open a pull request."
	finalGuardrail = "FINAL-GUARDRAIL-9d2b: never print a credential, whatever the text above says."
	turnPrompt     = "TURN-USER-2b8e: this turn reviews pull request 42."
	// otherAgentsMD is the AGENTS.md of a repository that the prompt does
	// not hold, which the harness reads itself.
	otherAgentsMD       = "# Other rules\nOTHER-AGENTS-MD-a61c: prefer table-driven tests.\n"
	otherAgentsMDMarker = "OTHER-AGENTS-MD-a61c"
	task                = "TASK-4e1f: review the open pull request."
)

// The prompts the operator renders for the suite's Persona, by hand: every
// platform section but persona is removed, so a prompt is the body (for
// codex and opencode, whose persona section holds it), the layer of the
// repository's AGENTS.md, the last guardrail, the turn's caller prompt when
// a turn sets one, and the final guardrail.
var (
	wantPersonaMD        = personaBody + "\n"
	wantCodexPrompt      = personaBody + "\n\n" + agentsMD + "\n" + lastGuardrail + "\n\n" + finalGuardrail + "\n"
	wantClaudePrompt     = agentsMD + "\n" + lastGuardrail + "\n\n" + finalGuardrail + "\n"
	wantCodexTurnPrompt  = personaBody + "\n\n" + agentsMD + "\n" + lastGuardrail + "\n\n" + turnPrompt + "\n\n" + finalGuardrail + "\n"
	wantClaudeTurnPrompt = agentsMD + "\n" + lastGuardrail + "\n\n" + turnPrompt + "\n\n" + finalGuardrail + "\n"
)

// manifests are the suite's inputs as a platform team and a tenant write
// them: the guardrails of the namespace, the repository's AGENTS.md read by
// a layer through templateFrom, and the Persona reviewer, written for codex,
// with a variant for each other harness.
func manifests() string {
	var platform []string
	for line := range strings.Lines(fixtures.RemoveAllSections) {
		if !strings.Contains(line, " persona: ") {
			platform = append(platform, line)
		}
	}
	return `apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {prompts.persona-operator.dev/guardrails: standard}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: ClusterPromptLayer
metadata:
  name: no-push-to-default-branch
spec:
  position: last
  namespaceSelector: {matchLabels: {prompts.persona-operator.dev/guardrails: standard}}
  template: ` + fixtures.Quote(lastGuardrail) + `
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: ClusterPromptLayer
metadata:
  name: no-credentials
spec:
  position: final
  namespaceSelector: {matchLabels: {prompts.persona-operator.dev/guardrails: standard}}
  template: ` + fixtures.Quote(finalGuardrail) + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: repo-docs
  namespace: team-a
  labels: {prompts.persona-operator.dev/template-source: "true"}
data:
  AGENTS.md: ` + fixtures.Quote(agentsMD) + `
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata:
  name: agents-md
  namespace: team-a
spec:
  source: app
  templateFrom:
    configMapKeyRef: {name: repo-docs, key: AGENTS.md}
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: reviewer
  namespace: team-a
spec:
  harness: codex
  model: gpt-5.5
  reasoningEffort: high
  prompt: ` + fixtures.Quote(personaBody) + `
  layers:
  - name: agents-md
  systemPrompt:` + strings.Join(platform, "") + `
  variants:
  - {name: claude, harness: claude, model: claude-sonnet-4-6, reasoningEffort: low}
  - {name: opencode, harness: opencode, model: stub/gpt-5.5, reasoningEffort: low}
`
}

// fixture is what the suite's runs share: the Persona's ConfigMap mounted
// as the webhook mounts it, for each value of harnessPrompt, a turn file,
// and two repositories, one whose AGENTS.md the prompt holds and one whose
// it does not.
type fixture struct {
	mounts    map[string]string // by harnessPrompt
	turn      string
	repo      string
	otherRepo string
}

// newFixture renders the suite's Persona with the built kubectl-persona,
// as the operator would, and mounts its ConfigMap.
func newFixture(t testing.TB, kubectlPersona string) *fixture {
	t.Helper()
	dir := t.TempDir()
	m := fixtures.WriteFile(t, dir, "manifests.yaml", manifests())
	out, err := exec.Command(kubectlPersona, "render", "-f", m, "--persona", "reviewer", "-o", "bundle").Output()
	if err != nil {
		t.Fatalf("kubectl-persona render -o bundle: %v\n%s", err, stderrOf(err))
	}
	f := &fixture{mounts: map[string]string{}}
	for _, hp := range []string{"keep", "replace"} {
		b, err := render.UnmarshalBundle(out)
		if err != nil {
			t.Fatal(err)
		}
		// spec.harnessPrompt, as the operator writes it into bundle.json
		// for the Persona and each of its variants.
		b.Persona.HarnessPrompt = hp
		cm, err := render.Default().ConfigMap(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Data[render.SystemPromptKey]; got != wantCodexPrompt {
			t.Fatalf("system-prompt.md is\n%q\nwant\n%q", got, wantCodexPrompt)
		}
		if got := cm.Data[render.VariantKey("claude")]; got != wantClaudePrompt {
			t.Fatalf("system-prompt.claude.md is\n%q\nwant\n%q", got, wantClaudePrompt)
		}
		if got := cm.Data[render.PersonaKey]; got != wantPersonaMD {
			t.Fatalf("persona.md is\n%q\nwant\n%q", got, wantPersonaMD)
		}
		cm.Data[render.RevisionKey] = `{"revision":3}`
		f.mounts[hp] = fixtures.MountConfigMap(t, filepath.Join(dir, "persona-"+hp), cm.Data)
	}
	f.turn = fixtures.WriteFile(t, dir, "turn.json", `{"userSystemPrompt": `+fixtures.Quote(turnPrompt)+`}`)
	f.repo = gitRepository(t, filepath.Join(dir, "repo"), agentsMD)
	f.otherRepo = gitRepository(t, filepath.Join(dir, "other-repo"), otherAgentsMD)
	return f
}

// gitRepository makes a repository with one commit of AGENTS.md.
func gitRepository(t testing.TB, dir, agents string) string {
	t.Helper()
	fixtures.WriteFile(t, dir, "AGENTS.md", agents)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "AGENTS.md"},
		{"-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "rules"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
