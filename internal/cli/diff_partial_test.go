package cli

import (
	"testing"

	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// A persona that does not render on the old side and does on the new shows
// as fixed, with its prompt diffed against nothing; the others are diffed as
// usual; the old side's problem is shown and does not fail the diff.
func TestDiffShowsAFix(t *testing.T) {
	dir := t.TempDir()
	agentic := barePersona("agentic", "", "a", "Agentic.")
	broken := fixtures.WriteFile(t, dir, "broken.yaml", docs(agentic, barePersona("child", "  inherit: [agnetic]\n", "c", "Child."), barePersona("other", "", "o", "One")))
	fixed := fixtures.WriteFile(t, dir, "fixed.yaml", docs(agentic, barePersona("child", "  inherit: [agentic]\n", "c", "Child."), barePersona("other", "", "o", "Two")))

	r := run(t, "", "diff", "-f", fixed, "--against", broken)
	r.expect(t, DiffFound, "persona default/child fixed: it does not render on the old side\n"+
		"persona default/child system-prompt.md\n"+
		"--- old/default/child/system-prompt.md\n+++ new/default/child/system-prompt.md\n@@ -0,0 +1,3 @@\n+Agentic.\n+\n+Child.\n"+
		"persona default/other system-prompt.md\n"+
		"--- old/default/other/system-prompt.md\n+++ new/default/other/system-prompt.md\n@@ -1 +1 @@\n-One\n+Two\n")
	wantErr := broken + `:2 Persona/child: spec.inherit[0]: Persona "agnetic" (referenced by persona "child") not found; did you mean "agentic"?` + "\n" +
		"the manifests of --against: 1 problem; run 'kubectl-persona validate' on them\n"
	if r.stderr != wantErr {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, wantErr)
	}

	// The other way round the change breaks the persona: status 2, with
	// what still renders diffed.
	r = run(t, "", "diff", "-f", broken, "--against", fixed)
	r.expect(t, DiffError, "persona default/child broken: it does not render on the new side\n"+
		"persona default/other system-prompt.md\n"+
		"--- old/default/other/system-prompt.md\n+++ new/default/other/system-prompt.md\n@@ -1 +1 @@\n-Two\n+One\n")
	wantErr = broken + `:2 Persona/child: spec.inherit[0]: Persona "agnetic" (referenced by persona "child") not found; did you mean "agentic"?` + "\n" +
		"the manifests of -f: 1 problem; the diff shows the personas that render; run 'kubectl-persona validate' on them\n"
	if r.stderr != wantErr {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, wantErr)
	}

	// -o json: the statuses and each side's problems, nothing on stderr.
	r = run(t, "", "diff", "-f", fixed, "--against", broken, "-o", "json")
	var got DiffResult
	decodeStrict(t, r.stdout, &got)
	if r.code != DiffFound || r.stderr != "" || len(got.Personas) != 2 || got.Personas[0].Status != promptdiff.Fixed ||
		len(got.Problems) != 1 || got.Problems[0].Side != "old" || got.Problems[0].Field != "spec.inherit[0]" || got.Problems[0].Reason != "ReferenceNotFound" {
		t.Errorf("exit %d, stderr %q, result %+v", r.code, r.stderr, got)
	}
}
