package cli

import (
	"strings"
	"testing"
)

func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "__start_kubectl-persona",
		"zsh":  "#compdef kubectl-persona",
		"fish": "complete -c kubectl-persona",
	} {
		r := run(t, "", "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, marker) {
			t.Errorf("completion %s: status %d, no %q in\n%.300s", shell, r.code, marker, r.stdout)
		}
	}
	run(t, "", "completion").expect(t, 2, "")
	run(t, "", "completion", "powershell").expect(t, 2, "")

	// What the scripts ask for: commands, and the values of -o.
	r := run(t, "", "__complete", "d")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "diff\t") {
		t.Errorf("__complete d = %q", r.stdout)
	}
	r = run(t, "", "__complete", "diff", "-o", "")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "text\njson\n:4\n") {
		t.Errorf("__complete diff -o = %q", r.stdout)
	}
}
