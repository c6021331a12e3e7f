package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// chainFile is c0 inheriting c1 inheriting ... c(n-1), one Persona a
// document of 9 lines, c0 first.
func chainFile(n int) string {
	manifests := make([]string, n)
	for i := range n {
		inherit := "[]"
		if i+1 < n {
			inherit = fmt.Sprintf("[c%d]", i+1)
		}
		manifests[i] = persona(fmt.Sprintf("c%d", i), fmt.Sprintf("  inherit: %s\n  prompt: C%d", inherit, i))
	}
	return docs(manifests...)
}

// A 3,000-deep chain: each Persona more than 64 deep is InheritanceTooDeep,
// found after 65 reads, so validating them all is linear in the file.
func TestValidateDeepChain(t *testing.T) {
	const n = 3000
	file := fixtures.WriteFile(t, t.TempDir(), "chain.yaml", chainFile(n))
	r := run(t, "", "validate", "-f", file)
	if r.code != 1 {
		t.Fatalf("exit status = %d, want 1\n%.2000s%s", r.code, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("%d problems found\n", n-64); r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	// c0 to c2935 have chains of 3,000 down to 65 Personas; c2936 to c2999
	// have 64 down to 1.
	const tooDeep = n - 64
	if len(lines) != tooDeep {
		t.Fatalf("%d lines, want %d problems; the last: %q", len(lines), tooDeep, lines[len(lines)-1])
	}
	for _, i := range []int{0, 1, tooDeep - 1} {
		// A problem is placed by its document's number in the file.
		want := fmt.Sprintf(`%s:%d Persona/c%d: spec.inherit: inheritance chain holds more than the limit of 64 personas (persona "c%d" is the 65th)`, file, i+1, i, i+64)
		if lines[i] != want {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
}

func BenchmarkValidateDeepChain(b *testing.B) {
	dir := b.TempDir()
	file := fixtures.WriteFile(b, dir, "chain.yaml", chainFile(3000))
	for b.Loop() {
		Run([]string{"validate", "-f", file}, strings.NewReader(""), new(strings.Builder), new(strings.Builder))
	}
}
