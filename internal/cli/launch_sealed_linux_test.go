//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/persona-operator/persona-operator/internal/render"
)

// TestLaunchPassesSealedFiles: the files a harness reads are in-memory
// files sealed against writes and inherited across exec, so that nothing
// that shares HOME with the agent can replace what the harness reads.
func TestLaunchPassesSealedFiles(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, harnessPromptKeep))
	home := t.TempDir()
	env := mountEnv(dir, render.VariantKey("claude"))
	env["HOME"] = home
	l := runLaunch(t, env, "--", "claude", "-p", "do it")
	if l.code != 0 {
		t.Fatalf("exit %d: %s", l.code, l.stderr)
	}
	i := slices.Index(l.argv, "--append-system-prompt-file")
	if i < 0 || i+1 >= len(l.argv) {
		t.Fatalf("no --append-system-prompt-file in %q", l.argv)
	}
	path := l.argv[i+1]
	m := regexp.MustCompile(`^/proc/` + strconv.Itoa(os.Getpid()) + `/fd/(\d+)$`).FindStringSubmatch(path)
	if m == nil {
		t.Fatalf("--append-system-prompt-file %s: want /proc/%d/fd/N, an in-memory file of the process the harness replaces", path, os.Getpid())
	}
	if got, want := fileArg(t, l.argv, "--append-system-prompt-file"), launchPersonaMD+"\n"+launchPrompt; got != want {
		t.Errorf("the in-memory file holds %q, want %q", got, want)
	}
	fd, _ := strconv.Atoi(m[1])
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals != promptSeals {
		t.Errorf("seals %#x (%v), want %#x: write, grow, shrink and seal", seals, err, promptSeals)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Errorf("descriptor flags %#x (%v): close-on-exec would leave the harness without it", flags, err)
	}
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		_, err = f.WriteString("a prompt of another's")
		_ = f.Close()
		if err == nil {
			t.Error("the passed file took a write")
		}
	}
	if err := os.Truncate(path, 0); err == nil {
		t.Error("the passed file took a truncation")
	}
	if got := fileArg(t, l.argv, "--append-system-prompt-file"); !strings.HasSuffix(got, launchPrompt) {
		t.Errorf("after the writes the file holds %q", got)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("launch wrote into HOME: %v", entries)
	}
}

// TestLaunchWritesFilesWithoutSealedOnes: where the system has no sealed
// in-memory files, the files go under $HOME/.cache, and the log says why.
func TestLaunchWritesFilesWithoutSealedOnes(t *testing.T) {
	home := t.TempDir()
	f := &passedFiles{env: map[string]string{"HOME": home}, seal: func(string, string) (string, error) { return "", errNoSealedFiles }}
	path, err := f.place("system-prompt.md", "the prompt")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".cache", Name, "launch"); filepath.Dir(path) != want {
		t.Errorf("wrote %s, want it in %s", path, want)
	}
	if raw, err := os.ReadFile(path); err != nil || string(raw) != "the prompt" {
		t.Errorf("%s holds %q (%v)", path, raw, err)
	}
	if !strings.Contains(f.fallback, "not available") || !strings.Contains(f.fallback, filepath.Join(home, ".cache")) {
		t.Errorf("the log line %q does not say why and where", f.fallback)
	}
	f = &passedFiles{env: map[string]string{}, seal: f.seal}
	if _, err := f.place("system-prompt.md", "the prompt"); err == nil || !strings.Contains(err.Error(), "HOME is not set") {
		t.Errorf("without HOME: %v, want an error naming HOME", err)
	}
}
