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

func TestCompletionOfTheRevisionCommands(t *testing.T) {
	r := run(t, "", "__complete", "hi")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "history\t") {
		t.Errorf("__complete hi = %q", r.stdout)
	}
	r = run(t, "", "__complete", "ro")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "rollback\t") {
		t.Errorf("__complete ro = %q", r.stdout)
	}
	r = run(t, "", "__complete", "history", "p", "-o", "")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "text\njson\n:4\n") {
		t.Errorf("__complete history p -o = %q", r.stdout)
	}
	r = run(t, "", "__complete", "history", "p", "--revision", "1", "-o", "")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "prompt\nconfigmap\njson\n:4\n") {
		t.Errorf("__complete history p --revision 1 -o = %q", r.stdout)
	}
	r = run(t, "", "__complete", "rollback", "p", "--")
	for _, flag := range []string{"--to-revision", "--clear", "--timeout", "--kubeconfig", "--context", "--namespace"} {
		if !strings.Contains(r.stdout, flag+"\t") {
			t.Errorf("__complete rollback p -- has no %s: %q", flag, r.stdout)
		}
	}
}
