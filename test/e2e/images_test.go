package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/persona-operator/persona-operator/internal/image"
)

// The images the node runs; containerd's sandbox_image (hack/e2e-node.sh)
// and test/e2e/overlay name them.
const (
	pauseImage = "docker.io/local/pause:e2e"
	agentImage = "docker.io/local/persona-agent:e2e"
	// codexImage runs the Codex CLI (codex_test.go); the check that runs it
	// builds and imports it.
	codexImage = "docker.io/local/codex-agent:e2e"
)

// buildBinaries builds the manager (as bin/cmd), kubectl-persona, the agent,
// sessions and pause into bin, static and as make image builds them, so that images
// need nothing beside them.
func buildBinaries(root, bin string) error {
	args := append(append([]string{"build"}, image.GoBuildFlags("e2e")...), "-o", bin+string(filepath.Separator),
		"./cmd", "./cmd/kubectl-persona", "./test/e2e/agent", "./test/e2e/sessions", "./test/e2e/pause")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the binaries: %w: %s", err, out)
	}
	return nil
}

// writeImages writes the pause, agent and manager images as OCI image
// layout tarballs into dir, for `ctr images import`. The manager's is the
// release's (internal/image, as make image builds it), under each of
// managerRefs.
func writeImages(bin, turnFile string, managerRefs []string, dir string) ([]string, error) {
	images := []struct {
		ref        string
		entrypoint string
		files      map[string]string
	}{
		{pauseImage, "/pause", map[string]string{"pause": filepath.Join(bin, "pause")}},
		{agentImage, "/agent", map[string]string{
			"agent":           filepath.Join(bin, "agent"),
			"kubectl-persona": filepath.Join(bin, "kubectl-persona"),
			"turn.json":       turnFile,
		}},
	}
	var tarballs []string
	for _, im := range images {
		path := archivePath(dir, im.ref)
		if err := writeImage(path, im.ref, im.entrypoint, im.files); err != nil {
			return nil, fmt.Errorf("image %s: %w", im.ref, err)
		}
		tarballs = append(tarballs, path)
	}
	files, config := image.Manager(filepath.Join(bin, "cmd"))
	manager, err := image.Build(files, config, runtime.GOARCH)
	if err != nil {
		return nil, fmt.Errorf("the manager's image: %w", err)
	}
	for _, ref := range managerRefs {
		path := archivePath(dir, ref)
		if err := image.WriteArchive(path, ref, manager); err != nil {
			return nil, fmt.Errorf("image %s: %w", ref, err)
		}
		tarballs = append(tarballs, path)
	}
	return tarballs, nil
}

// writeCodexImage writes the image codexImage into dir and returns its
// path: the Codex CLI's static binary codex, kubectl-persona and the
// entrypoint sessions, which runs one session of its command after another,
// in /usr/local/bin, on the PATH. Its layer is a plain tar: gzip would take
// longer, to compress here and to decompress in containerd, than the ~300 MB
// it saves take to copy.
func writeCodexImage(bin, codex, dir string) (string, error) {
	files := []image.File{
		{Name: "usr", Dir: true, Mode: 0o755},
		{Name: "usr/local", Dir: true, Mode: 0o755},
		{Name: "usr/local/bin", Dir: true, Mode: 0o755},
		{Name: "usr/local/bin/codex", Source: codex, Mode: 0o755},
		{Name: "usr/local/bin/kubectl-persona", Source: filepath.Join(bin, "kubectl-persona"), Mode: 0o755},
		{Name: "usr/local/bin/sessions", Source: filepath.Join(bin, "sessions"), Mode: 0o755},
	}
	img, err := image.BuildUncompressed(files, image.Config{Entrypoint: []string{"/usr/local/bin/sessions"}, Env: []string{"PATH=/usr/local/bin"}}, runtime.GOARCH)
	if err != nil {
		return "", err
	}
	path := archivePath(dir, codexImage)
	return path, image.WriteArchive(path, codexImage, img)
}

func archivePath(dir, ref string) string {
	return filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
}

// writeImage writes an image of one layer holding files (name in the image
// to path here) that runs entrypoint, as an OCI image layout tarball.
func writeImage(path, ref, entrypoint string, files map[string]string) error {
	var entries []image.File
	for name, source := range files {
		entries = append(entries, image.File{Name: name, Source: source, Mode: 0o755})
	}
	img, err := image.Build(entries, image.Config{Entrypoint: []string{entrypoint}}, runtime.GOARCH)
	if err != nil {
		return err
	}
	return image.WriteArchive(path, ref, img)
}
