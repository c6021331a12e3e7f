package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// promptPlatform is a PromptPlatform manifest named name: it removes every
// section but the ones replaced, given as key, template pairs.
func promptPlatform(name string, replaced ...string) string {
	keep := map[string]string{}
	for i := 0; i < len(replaced); i += 2 {
		keep[replaced[i]] = replaced[i+1]
	}
	var b strings.Builder
	b.WriteString("apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptPlatform\nmetadata:\n  name: " + name + "\nspec:\n  sections:\n")
	for _, key := range render.Catalog {
		if text, ok := keep[key]; ok {
			b.WriteString("    " + key + ": {replace: " + fixtures.Quote(text) + "}\n")
			continue
		}
		b.WriteString("    " + key + ": {remove: true}\n")
	}
	return b.String()
}

// TestRenderPlatform: render -f and -k apply the PromptPlatform among the
// manifests before the Persona's overrides. By hand: the platform keeps
// workspace and completion; the Persona replaces completion.
func TestRenderPlatform(t *testing.T) {
	platform := promptPlatform("default", "workspace", "Work in {{ .Workspace }}.", "completion", "Say done.")
	p := persona("p", "  prompt: P\n  context: {workspace: ws}\n  systemPrompt:\n    platform:\n      completion: {replace: Report back.}")
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "m.yaml", docs(platform, p))
	run(t, "", "render", "-f", f).expect(t, 0, "Work in ws.\n\nReport back.\n")

	kdir := t.TempDir()
	fixtures.WriteFile(t, kdir, "m.yaml", docs(platform, p))
	fixtures.WriteFile(t, kdir, "kustomization.yaml", "resources: [m.yaml]\n")
	run(t, "", "render", "-k", kdir).expect(t, 0, "Work in ws.\n\nReport back.\n")
}

// TestDiffPlatform: adding a PromptPlatform shows as a diff of the prompts
// it changes.
func TestDiffPlatform(t *testing.T) {
	p := barePersona("p", "", "x", "P")
	// p removes every section, so only a Persona that keeps one changes.
	q := persona("q", "  systemPrompt:"+strings.Replace(removeAll, "\n      completion: {remove: true}", "", 1))
	before := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(p, q))
	after := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(promptPlatform("default", "completion", "Say done."), p, q))
	r := run(t, "", "diff", "-f", after, "--against", before)
	if r.code != 1 || !strings.Contains(r.stdout, "+Say done.") || strings.Contains(r.stdout, "/p/") {
		t.Errorf("exit %d, stdout %q: want q's prompt to gain the platform's completion, and p unchanged", r.code, r.stdout)
	}
}

func TestValidatePlatform(t *testing.T) {
	ok := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(promptPlatform("default"), barePersona("p", "", "x", "P")))
	run(t, "", "validate", "-f", ok).expect(t, 0, "1 Persona, 0 PromptLayers, 1 PromptPlatform, 0 ConfigMaps: valid\n")

	named := fixtures.WriteFile(t, t.TempDir(), "m.yaml", promptPlatform("ours"))
	r := run(t, "", "validate", "-f", named)
	if r.code != ExitInvalid || !strings.Contains(r.stdout, named+":1 PromptPlatform/ours: metadata.name: Invalid value: \"ours\": must be default") {
		t.Errorf("exit %d, stdout %q: want the name refused", r.code, r.stdout)
	}

	broken := fixtures.WriteFile(t, t.TempDir(), "m.yaml", promptPlatform("default", "workspace", "{{ .Nope }}"))
	r = run(t, "", "validate", "-f", broken)
	if r.code != ExitInvalid || !strings.Contains(r.stdout, broken+":1 PromptPlatform/default: spec.sections.workspace.replace: Invalid value: ") || !strings.Contains(r.stdout, ".Nope is not a template variable") {
		t.Errorf("exit %d, stdout %q: want the template refused at its field", r.code, r.stdout)
	}
}

// TestHarnessPromptForbiddenOffline: validate and render apply the
// PromptPlatform's allowReplace: false as the operator does, naming each
// field that asks for replace, with the reason HarnessPromptForbidden.
func TestHarnessPromptForbiddenOffline(t *testing.T) {
	forbidding := promptPlatform("default") + "  harnessPrompt: {allowReplace: false}\n"
	base := persona("base", "  harnessPrompt: replace")
	p := persona("p", "  inherit: [base]\n  variants: [{name: a}, {name: b, harnessPrompt: replace}]")
	f := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(forbidding, base, p))
	const rule = " is forbidden by PromptPlatform default (its spec.harnessPrompt.allowReplace is false); set keep, or leave it unset"
	r := run(t, "", "validate", "-f", f)
	want := f + ":2 Persona/base: spec.harnessPrompt: replace" + rule + "\n" +
		f + ":3 Persona/p: spec.harnessPrompt: replace, inherited from persona \"base\"," + rule + "\n" +
		f + ":3 Persona/p: spec.variants[1].harnessPrompt: replace" + rule + "\n"
	if r.code != ExitInvalid || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("exit %d, stdout\n%s\nwant it to begin\n%s", r.code, r.stdout, want)
	}
	var result ValidateResult
	if err := json.Unmarshal([]byte(run(t, "", "validate", "-f", f, "-o", "json").stdout), &result); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, p := range result.Problems {
		reasons = append(reasons, p.Field+" "+p.Reason)
	}
	if wantReasons := []string{"spec.harnessPrompt HarnessPromptForbidden", "spec.harnessPrompt HarnessPromptForbidden",
		"spec.variants[1].harnessPrompt HarnessPromptForbidden"}; !slices.Equal(reasons, wantReasons) {
		t.Errorf("validate -o json gives %v, want %v", reasons, wantReasons)
	}
	r = run(t, "", "render", "-f", f, "--persona", "p")
	if r.code != ExitInvalid || !strings.Contains(r.stderr, `persona "p": spec.harnessPrompt: replace, inherited from persona "base",`+rule) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}

	allowing := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(promptPlatform("default"), base, p))
	r = run(t, "", "render", "-f", allowing, "--persona", "p", "-o", "bundle")
	if r.code != 0 || !strings.Contains(r.stdout, `"harnessPrompt":"replace"`) || !strings.Contains(r.stdout, `{"name":"b","harnessPrompt":"replace"}`) {
		t.Errorf("exit %d, bundle %s (stderr %s)", r.code, r.stdout, r.stderr)
	}
}
