package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

func TestValidateValid(t *testing.T) {
	dir := t.TempDir()
	fixtures.WriteFile(t, dir, "a.yaml", docs(
		barePersona("p", "  inherit: [base]\n  layers: [{name: agents}]\n", "a", "A"),
		barePersona("base", ""),
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: agents}\nspec:\n  templateFrom:\n    configMapKeyRef: {name: docs, key: AGENTS.md}\n",
	))
	fixtures.WriteFile(t, dir, "b/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: docs, labels: {prompts.persona-operator.dev/template-source: \"true\"}}\ndata: {AGENTS.md: Read me.}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
	run(t, "", "validate", "-f", dir).expect(t, 0, "2 Personas, 1 PromptLayer, 1 ConfigMap: valid\n")
}

func TestValidateProblems(t *testing.T) {
	dir := t.TempDir()
	a := fixtures.WriteFile(t, dir, "a.yaml", docs(
		persona("typo", "  inherti: [base]"),
		barePersona("orphan", "  inherit: [base, ghost]\n  layers: [{name: nolayer}]\n"),
		barePersona("base", ""),
		barePersona("loop-a", "  inherit: [loop-b]\n"),
		barePersona("loop-b", "  inherit: [loop-a]\n"),
	))
	b := fixtures.WriteFile(t, dir, "b.yaml", docs(
		barePersona("broken", "", "ok", "fine", "bad", "{{ index .Repos 2 }}"),
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: from-cm}\nspec:\n  templateFrom:\n    configMapKeyRef: {name: docs, key: AGENTS.md}\n",
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Personna\nmetadata: {name: x}\n",
		"a: [\n",
		barePersona("base", ""),
	))
	r := run(t, "", "validate", "-f", a, "-f", b)
	if r.code != 1 {
		t.Fatalf("exit status = %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := []string{
		// A misspelled key, from admission: the field and its suggestion.
		`^` + regexp.QuoteMeta(a+`:1 Persona/typo: spec.inherti: `) + `.*unknown field.*"inherit"`,
		// A missing parent and a missing layer, at the entries naming them.
		`^` + regexp.QuoteMeta(a+`:2 Persona/orphan: spec.inherit[1]: Persona "ghost" (referenced by persona "orphan") not found`) + `$`,
		`^` + regexp.QuoteMeta(a+`:2 Persona/orphan: spec.layers[0]: PromptLayer "nolayer" (referenced by persona "orphan") not found`) + `$`,
		`^` + regexp.QuoteMeta(a+`:4 Persona/loop-a: spec.inherit: inheritance cycle: loop-a -> loop-b -> loop-a`) + `$`,
		`^` + regexp.QuoteMeta(a+`:5 Persona/loop-b: spec.inherit: inheritance cycle: loop-b -> loop-a -> loop-b`) + `$`,
		`^` + regexp.QuoteMeta(b+`:1 Persona/broken: spec.systemPrompt.extensions[1].template: the system prompt of persona "broken" does not render: render system prompt section extension.bad: `),
		`^` + regexp.QuoteMeta(b+`:2 PromptLayer/from-cm: spec.templateFrom.configMapKeyRef.name: ConfigMap "docs" (referenced by layer "from-cm") not found`) + `$`,
		`^` + regexp.QuoteMeta(b+`:3: kind: `) + `.*"Personna"`,
		`^` + regexp.QuoteMeta(b+`:4: invalid YAML: `),
		`^` + regexp.QuoteMeta(b+`:5 Persona/base: metadata.name: `) + `.*` + regexp.QuoteMeta(a+":3"),
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("problem %d = %s\nwant match for %s", i+1, lines[i], w)
		}
	}
	if !strings.Contains(r.stderr, "10 problems") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// A layer a parent lists, missing, is reported on the child at spec.layers
// (its own list does not name it).
func TestValidateInheritedReference(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "p.yaml", docs(
		barePersona("parent", "  layers: [{name: gone}]\n"),
		barePersona("child", "  inherit: [parent]\n"),
	))
	run(t, "", "validate", "-f", f).expect(t, 1,
		f+`:1 Persona/parent: spec.layers[0]: PromptLayer "gone" (referenced by persona "parent") not found`+"\n"+
			f+`:2 Persona/child: spec.layers: PromptLayer "gone" (referenced by persona "parent") not found`+"\n")
}

func TestValidateStdinAndNamespaces(t *testing.T) {
	// The same name in two namespaces is no duplicate; the parent must be
	// in the persona's own namespace.
	in := docs(
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: base, namespace: other}\nspec: {}\n",
		barePersona("child", "  inherit: [base]\n"),
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: child, namespace: third}\nspec: {}\n",
	)
	run(t, in, "validate", "-f", "-").expect(t, 1,
		`<stdin>:2 Persona/child: spec.inherit[0]: Persona "base" (referenced by persona "child") not found`+"\n")
	run(t, in, "validate", "-f", "-", "-n", "other").expect(t, 0, "3 Personas, 0 PromptLayers, 0 ConfigMaps: valid\n")
}

func TestValidateUsage(t *testing.T) {
	run(t, "", "validate").expect(t, 2, "")
	run(t, "", "validate", "x.yaml").expect(t, 2, "")
	run(t, "", "validate", "-f", filepath.Join(t.TempDir(), "none.yaml")).expect(t, 1, "")
	run(t, "", "validate", "--bogus").expect(t, 2, "")
}

// -o json decodes into the documented types, strictly, with and without
// problems.
func TestValidateJSON(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "a.yaml", docs(
		persona("typo", "  modle: x"),
		barePersona("orphan", "  inherit: [ghost]\n"),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: prompts.persona-operator.dev/v1alpha1\n  kind: PromptLayer\n  metadata: {}\n  spec: {template: x}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: docs}\ndata: {a: b}\n",
	))
	r := run(t, "", "validate", "-f", f, "-o", "json")
	if r.code != 1 || r.stderr != "" {
		t.Fatalf("exit status %d, stderr %s", r.code, r.stderr)
	}
	var got ValidateResult
	decodeStrict(t, r.stdout, &got)
	if got.Valid || got.Counts != (Counts{Documents: 4, Personas: 2, PromptLayers: 1, ConfigMaps: 1, Problems: 3}) || len(got.Problems) != 3 {
		t.Fatalf("validate -o json =\n%s", r.stdout)
	}
	typo, orphan, unnamed := got.Problems[0], got.Problems[1], got.Problems[2]
	if typo.File != f || typo.Document != 1 || typo.Item != nil || typo.Kind != "Persona" || typo.Name != "typo" || typo.Field != "spec.modle" || typo.Reason != "" || !strings.Contains(typo.Message, "unknown field") {
		t.Errorf("first problem = %+v", typo)
	}
	if orphan.Document != 2 || orphan.Field != "spec.inherit[0]" || orphan.Reason != "ReferenceNotFound" || orphan.Message != `Persona "ghost" (referenced by persona "orphan") not found` {
		t.Errorf("second problem = %+v", orphan)
	}
	if unnamed.Document != 3 || unnamed.Item == nil || *unnamed.Item != 0 || unnamed.Kind != "PromptLayer" || unnamed.Name != "" || unnamed.Field != "metadata.name" {
		t.Errorf("third problem = %+v", unnamed)
	}

	valid := fixtures.WriteFile(t, dir, "valid.yaml", barePersona("p", ""))
	r = run(t, "", "validate", "-f", valid, "-o", "json")
	r.expect(t, 0, r.stdout)
	var ok ValidateResult
	decodeStrict(t, r.stdout, &ok)
	if !ok.Valid || ok.Problems == nil || len(ok.Problems) != 0 || ok.Counts.Personas != 1 {
		t.Errorf("validate -o json =\n%s", r.stdout)
	}
	run(t, "", "validate", "-f", valid, "-o", "yaml").expect(t, 2, "")
}
