package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// FuzzImport imports arbitrary bytes as a Markdown persona file. It must
// not panic; a failure is exit status 1 with nothing on stdout; a success
// prints YAML that reads back, keeps the body byte for byte and that
// validate accepts, but for references the persona makes to objects that
// are not there and templates that fail at render time (which only a
// cluster's other objects or a turn could fix).
func FuzzImport(f *testing.F) {
	f.Add([]byte(benchLean))
	f.Add([]byte("---\nname: Base\n---\nYou are Aura, a coding assistant.\n"))
	f.Add([]byte("---\nname: Agentic\ninherit: [Base]\n---\n## Critical Rules\n1. Complete every task before stopping.\n"))
	f.Add([]byte("no front matter at all\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\r\nname: x\r\n---\r\n  body \r\n\r\n"))
	f.Add([]byte("---\nname: p\nvars: {a: b}\nstreaming: true\ncontext: {workspace: w}\n---\n{{ .Harness }}"))
	f.Add([]byte("---\nname: p\ntools: [a]\n---\n"))
	f.Add([]byte("---\nname: 9\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := fixtures.WriteFile(t, dir, "fuzz.md", string(data))
		r := run(t, "", "import", file)
		if r.code != 0 {
			if r.code != ExitInvalid || r.stdout != "" {
				t.Fatalf("exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			return
		}
		ps := readPersonas(t, r.stdout)
		if len(ps) != 1 {
			t.Fatalf("%d personas in\n%s", len(ps), r.stdout)
		}
		_, body, err := splitFrontMatter(data)
		if err != nil {
			t.Fatal(err)
		}
		if ps[0].Spec.Prompt != string(body) {
			t.Fatalf("prompt = %q, want %q", ps[0].Spec.Prompt, body)
		}
		v := run(t, "", "validate", "-f", fixtures.WriteFile(t, dir, "out.yaml", r.stdout))
		if v.code == 0 {
			return
		}
		for line := range strings.Lines(v.stdout) {
			if !acceptableAfterImport(line) {
				t.Fatalf("validate rejects the import:\n%s\nof\n%s", v.stdout, r.stdout)
			}
		}
		if v.code != ExitInvalid || v.stdout == "" || !bytes.Contains([]byte(r.stdout), []byte("spec:")) {
			t.Fatalf("validate: %d %q %q", v.code, v.stdout, v.stderr)
		}
	})
}

// acceptableAfterImport reports whether a validate problem is one an
// imported persona may have on its own: a reference to an object the import
// does not create, a cycle through itself, a template that fails only when
// rendered, a render too large.
func acceptableAfterImport(line string) bool {
	for _, s := range []string{") not found", "inheritance cycle: ", "does not render: ", "over the limit"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}
