package cli

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// -o persona prints persona.md: the normalized prompt bodies of the
// inheritance chain joined with one blank line, plus one newline
// (personas.md#inheritance, personas.md#delivery). For claude that body is
// in no system prompt, since the persona section renders for codex and
// opencode only (personas.md#platform-sections).
func TestRenderPersonaFile(t *testing.T) {
	dir := t.TempDir()
	chain := docs(
		persona("base", "  prompt: \"\\n\\nYou review Go code.  \\n\\n\""),
		persona("reviewer", "  inherit: [base]\n  prompt: Cite the line you mean.\n  variants: [{name: codex, harness: codex}]"),
		persona("coder", "  inherit: [base]\n  harness: codex\n  prompt: Write the fix.\n"),
		barePersona("empty", ""),
	)
	f := fixtures.WriteFile(t, dir, "p.yaml", chain)

	const reviewerBody = "You review Go code.\n\nCite the line you mean.\n"
	run(t, "", "render", "-f", f, "--persona", "reviewer", "-o", "persona").expect(t, 0, reviewerBody)
	run(t, "", "render", "-f", f, "--persona", "coder", "-o", "persona").expect(t, 0, "You review Go code.\n\nWrite the fix.\n")
	// No prompt anywhere in the chain: persona.md is empty.
	run(t, "", "render", "-f", f, "--persona", "empty", "-o", "persona").expect(t, 0, "")

	// The claude prompt leaves the body out; its codex variant and the codex
	// persona carry it in their persona section.
	claude := run(t, "", "render", "-f", f, "--persona", "reviewer")
	if claude.code != 0 || strings.Contains(claude.stdout, "Cite the line you mean.") {
		t.Errorf("claude system prompt (status %d) holds the persona body:\n%s", claude.code, claude.stdout)
	}
	for _, args := range [][]string{{"--persona", "reviewer", "--variant", "codex"}, {"--persona", "coder"}} {
		r := run(t, "", append([]string{"render", "-f", f}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "You review Go code.") {
			t.Errorf("render %v (status %d) lacks the persona body:\n%s", args, r.code, r.stdout)
		}
	}

	// From the bundle it is the same file; persona.md is one for all
	// variants, so --variant is refused with it.
	bundle := fixtures.WriteFile(t, dir, "bundle.json", run(t, "", "render", "-f", f, "--persona", "reviewer", "-o", "bundle").stdout)
	run(t, "", "render", "--bundle", bundle, "-o", "persona").expect(t, 0, reviewerBody)
	r := run(t, "", "render", "-f", f, "--persona", "reviewer", "-o", "persona", "--variant", "codex")
	if r.code != 2 || !strings.Contains(r.stderr, "--variant") {
		t.Errorf("-o persona --variant: status %d, stderr %s", r.code, r.stderr)
	}

	// A persona whose system prompt does not render has no ConfigMap, so no
	// persona.md either.
	failing := fixtures.WriteFile(t, dir, "fail.yaml", barePersona("bad", "  prompt: Body.\n", "first", "{{ index .Repos 0 }}"))
	if r := run(t, "", "render", "-f", failing, "-o", "persona"); r.code != 1 || r.stdout != "" {
		t.Errorf("failing render -o persona: status %d, stdout %q", r.code, r.stdout)
	}

	// The shells complete the value.
	if r := run(t, "", "__complete", "render", "-o", ""); r.code != 0 || !strings.HasPrefix(r.stdout, "prompt\npersona\nconfigmap\nbundle\n:4\n") {
		t.Errorf("__complete render -o = %q", r.stdout)
	}
}
