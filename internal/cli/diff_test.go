package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// files writes name, content pairs under dir and returns dir.
func files(t *testing.T, dir string, nameContent ...string) string {
	t.Helper()
	for i := 0; i < len(nameContent); i += 2 {
		fixtures.WriteFile(t, dir, nameContent[i], nameContent[i+1])
	}
	return dir
}

// The expected diffs are derived by hand from personas.md#composition: the
// personas remove every platform section, so a prompt is its extensions
// then its layers (a user layer appends), joined by one blank line.
func TestDiff(t *testing.T) {
	houseStyle := func(text string) string { return layer("house-style", "user", "append", text) }
	family := func(style string) string {
		return docs(
			houseStyle(style),
			barePersona("base", "  layers: [{name: house-style}]\n", "a", "BASE"),
			barePersona("child", "  inherit: [base]\n", "b", "CHILD"),
			barePersona("other", "", "c", "OTHER"),
		)
	}
	tests := []struct {
		name     string
		old, new string
		args     []string
		code     int
		stdout   string
	}{
		{
			name: "a layer edit reaches the persona listing it and its child",
			old:  family("Write short sentences."),
			new:  family("Write short sentences.\nCite sources."),
			args: []string{"-n", "team"},
			code: DiffFound,
			// base: BASE, blank, the layer; child: BASE, blank, CHILD,
			// blank, the layer. other has no layer and is not mentioned.
			stdout: "persona team/base system-prompt.md\n" +
				"--- old/team/base/system-prompt.md\n+++ new/team/base/system-prompt.md\n" +
				"@@ -1,3 +1,4 @@\n BASE\n \n Write short sentences.\n+Cite sources.\n" +
				"persona team/child system-prompt.md\n" +
				"--- old/team/child/system-prompt.md\n+++ new/team/child/system-prompt.md\n" +
				"@@ -3,3 +3,4 @@\n CHILD\n \n Write short sentences.\n+Cite sources.\n",
		},
		{
			name: "a guardrail edit reaches the Personas of the namespaces it selects",
			old:  docs(guardrail("no-push", "last", "Never push.", "guardrails: standard"), namespace("team", "guardrails: standard"), barePersona("p", "", "x", "P")),
			new:  docs(guardrail("no-push", "last", "Never push to main.", "guardrails: standard"), namespace("team", "guardrails: standard"), barePersona("p", "", "x", "P")),
			args: []string{"-n", "team"},
			code: DiffFound,
			// P, blank, the guardrail (last).
			stdout: "persona team/p system-prompt.md\n" +
				"--- old/team/p/system-prompt.md\n+++ new/team/p/system-prompt.md\n" +
				"@@ -1,3 +1,3 @@\n P\n \n-Never push.\n+Never push to main.\n",
		},
		{
			name: "a namespace label selects a guardrail",
			old:  docs(guardrail("no-push", "first", "Never push.", "guardrails: standard"), namespace("team", "other: label"), barePersona("p", "", "x", "P")),
			new:  docs(guardrail("no-push", "first", "Never push.", "guardrails: standard"), namespace("team", "guardrails: standard"), barePersona("p", "", "x", "P")),
			args: []string{"-n", "team"},
			code: DiffFound,
			// The guardrail goes first: itself, blank, P.
			stdout: "persona team/p system-prompt.md\n" +
				"--- old/team/p/system-prompt.md\n+++ new/team/p/system-prompt.md\n" +
				"@@ -1 +1,3 @@\n+Never push.\n+\n P\n",
		},
		{
			name:   "a persona added and one removed",
			old:    docs(barePersona("a", "", "x", "A"), barePersona("b", "", "x", "B")),
			new:    docs(barePersona("b", "", "x", "B"), barePersona("c", "", "x", "C")),
			code:   DiffFound,
			stdout: "persona default/a removed\npersona default/c added\n",
		},
		{
			name: "a variant added and the body changed: keys in order",
			old:  barePersona("p", "  prompt: Old body.\n", "x", "X"),
			new:  barePersona("p", "  prompt: New body.\n  variants: [{name: fast, model: claude-haiku-4-5}]\n", "x", "X"),
			code: DiffFound,
			stdout: "persona default/p persona.md\n" +
				"--- old/default/p/persona.md\n+++ new/default/p/persona.md\n@@ -1 +1 @@\n-Old body.\n+New body.\n" +
				"persona default/p system-prompt.fast.md\n" +
				"--- old/default/p/system-prompt.fast.md\n+++ new/default/p/system-prompt.fast.md\n@@ -0,0 +1 @@\n+X\n",
		},
		{
			name: "no change at all",
			old:  family("Same."),
			new:  family("Same."),
			code: DiffNone,
		},
		{
			name: "an edit that renders the same: only bundle.json differs",
			old:  barePersona("p", "  vars: {unused: one}\n", "x", "X"),
			new:  barePersona("p", "  vars: {unused: two}\n", "x", "X"),
			code: DiffNone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			old := fixtures.WriteFile(t, dir, "old/manifests.yaml", tt.old)
			// The new side is a directory: every file of it is read.
			new := files(t, filepath.Join(dir, "new"), "manifests.yaml", tt.new)
			args := append([]string{"diff", "-f", new, "--against", old}, tt.args...)
			run(t, "", args...).expect(t, tt.code, tt.stdout)
		})
	}
}

func TestDiffErrors(t *testing.T) {
	dir := t.TempDir()
	valid := fixtures.WriteFile(t, dir, "valid.yaml", barePersona("p", "", "x", "X"))
	// An unreadable tree: a manifest that is a dangling link.
	tree := filepath.Join(dir, "tree")
	fixtures.WriteFile(t, tree, "ok.yaml", barePersona("p", "", "x", "X"))
	broken := filepath.Join(tree, "broken.yaml")
	if err := os.Symlink(filepath.Join(dir, "gone.yaml"), broken); err != nil {
		t.Fatal(err)
	}
	notBuilding := files(t, filepath.Join(dir, "kust"), "kustomization.yaml", "resources: [missing.yaml]\n")

	tests := []struct {
		name   string
		args   []string
		stderr []string // parts of stderr
	}{
		{"an unreadable tree", []string{"-f", tree, "--against", valid}, []string{broken}},
		{"a path that does not exist", []string{"-f", valid, "--against", filepath.Join(dir, "nope")}, []string{filepath.Join(dir, "nope")}},
		{"a kustomization that does not build", []string{"-k", notBuilding, "--against", valid},
			[]string{"the kustomization " + notBuilding + " does not build: "}},
		{"a kubeconfig that does not exist", []string{"-f", valid, "--live", "--kubeconfig", filepath.Join(dir, "none.kubeconfig")},
			[]string{"--live: the kubeconfig: ", "none.kubeconfig"}},
		{"usage: no new side", []string{"--against", valid}, []string{"one of -f PATH and -k DIR is required"}},
		{"usage: nothing to compare with", []string{"-f", valid}, []string{"one of --against PATH, --against-k DIR and --live is required"}},
		{"usage: --live and --against", []string{"-f", valid, "--against", valid, "--live"}, []string{"mutually exclusive"}},
		{"-f with a -k that does not build", []string{"-f", valid, "-k", notBuilding, "--against", valid},
			[]string{"the kustomization " + notBuilding + " does not build: "}},
		{"--against with an --against-k that does not build", []string{"-f", valid, "--against", valid, "--against-k", notBuilding},
			[]string{"the kustomization " + notBuilding + " does not build: "}},
		{"usage: a kubeconfig context offline", []string{"-f", valid, "--against", valid, "--context", "prod"}, []string{"--context applies to --live"}},
		{"usage: standard input twice", []string{"-f", "-", "--against", "-"}, []string{"cannot both read standard input"}},
		{"usage: arguments", []string{"-f", valid, "--against", valid, "extra.yaml"}, []string{"unexpected arguments"}},
		{"usage: output", []string{"-f", valid, "--against", valid, "-o", "yaml"}, []string{`--output "yaml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"diff"}, tt.args...)...)
			r.expect(t, DiffError, "")
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not contain %q:\n%s", s, r.stderr)
				}
			}
			if strings.HasPrefix(tt.name, "usage") != strings.Contains(r.stderr, "--help") {
				t.Errorf("a pointer to --help only after a usage error:\n%s", r.stderr)
			}
		})
	}
}

// -o json decodes into the documented types, strictly.
func TestDiffJSON(t *testing.T) {
	dir := t.TempDir()
	old := fixtures.WriteFile(t, dir, "old.yaml", docs(barePersona("a", "", "x", "A"), barePersona("b", "", "x", "One\nTwo")))
	new := fixtures.WriteFile(t, dir, "new.yaml", docs(barePersona("b", "", "x", "One\n2\n3"), barePersona("c", "", "x", "C")))
	r := run(t, "", "diff", "-f", new, "--against", old, "-o", "json")
	if r.code != DiffFound {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	var got DiffResult
	decodeStrict(t, r.stdout, &got)
	want := DiffResult{Problems: []DiffProblem{}, Result: promptdiff.Result{Personas: []promptdiff.Persona{
		{Namespace: "default", Name: "a", Status: promptdiff.Removed},
		{Namespace: "default", Name: "b", Status: promptdiff.Changed, Keys: []promptdiff.Key{{
			Key:  "system-prompt.md",
			Diff: "--- old/default/b/system-prompt.md\n+++ new/default/b/system-prompt.md\n@@ -1,2 +1,3 @@\n One\n-Two\n+2\n+3\n",
			// Two lines in for one out.
			Added: 2, Removed: 1,
		}}},
		{Namespace: "default", Name: "c", Status: promptdiff.Added},
	}}}
	if !equalJSON(t, got, want) {
		t.Errorf("diff -o json =\n%s", r.stdout)
	}

	// No difference: an empty list, and status 0.
	r = run(t, "", "diff", "-f", old, "--against", old, "-o", "json")
	r.expect(t, DiffNone, "{\n    \"personas\": [],\n    \"problems\": []\n}\n")
}

func decodeStrict(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", s)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
