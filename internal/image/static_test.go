package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequireStatic builds a program with and without cgo: the static one
// passes, the one that needs the C library is refused by name.
func TestRequireStatic(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler, so no dynamically linked binary to refuse")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os/user\"\n\nfunc main() { _, _ = user.Current() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cgo    string
		refuse bool
	}{{"0", false}, {"1", true}} {
		bin := filepath.Join(dir, "prog-cgo"+c.cgo)
		build := exec.Command("go", "build", "-o", bin, src)
		build.Env = append(os.Environ(), "CGO_ENABLED="+c.cgo)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build with CGO_ENABLED=%s: %v: %s", c.cgo, err, out)
		}
		err := RequireStatic(bin)
		if c.refuse && (err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0")) {
			t.Errorf("CGO_ENABLED=%s: %v, want a refusal that names CGO_ENABLED=0", c.cgo, err)
		}
		if !c.refuse && err != nil {
			t.Errorf("CGO_ENABLED=%s: %v, want it accepted", c.cgo, err)
		}
	}
}
