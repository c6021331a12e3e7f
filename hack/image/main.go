// Command image builds the release's images without a container engine: the
// manager's and kubectl-persona's, each as an OCI image layout tarball, from
// binaries built as the Dockerfile builds them. make image runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/persona-operator/persona-operator/internal/image"
)

func main() {
	managerRef := flag.String("manager", "", "the manager image's name, e.g. ghcr.io/persona-operator/persona-operator:v0.1.0")
	cliRef := flag.String("kubectl-persona", "", "the kubectl-persona image's name")
	out := flag.String("out", "bin/images", "the directory the tarballs are written to")
	arch := flag.String("arch", runtime.GOARCH, "the architecture (GOARCH) of the images")
	version := flag.String("version", "dev", "the release's version, which the binaries report, e.g. v0.1.0")
	flag.Parse()
	if *managerRef == "" || *cliRef == "" {
		fmt.Fprintln(os.Stderr, "image: -manager and -kubectl-persona name the images")
		os.Exit(2)
	}
	if err := build(*managerRef, *cliRef, *out, *arch, *version); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(managerRef, cliRef, out, arch, version string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin, err := os.MkdirTemp(out, ".bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	images := []struct {
		ref, pkg, binary string
		spec             func(string) ([]image.File, image.Config)
	}{
		{managerRef, "./cmd", "manager", image.Manager},
		{cliRef, "./cmd/kubectl-persona", "kubectl-persona", image.KubectlPersona},
	}
	for _, im := range images {
		binary := filepath.Join(bin, im.binary)
		// The Dockerfile's flags, but -a: a fresh build there, a cached one here.
		args := append(append([]string{"build"}, image.GoBuildFlags(version)...), "-o", binary, im.pkg)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", im.pkg, err)
		}
		if err := image.RequireStatic(binary); err != nil {
			return err
		}
		files, config := im.spec(binary)
		img, err := image.Build(files, config, arch)
		if err != nil {
			return fmt.Errorf("%s: %w", im.ref, err)
		}
		path := filepath.Join(out, im.binary+".tar")
		if err := image.WriteArchive(path, im.ref, img); err != nil {
			return fmt.Errorf("%s: %w", im.ref, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("wrote %s: %s (%s)\n", path, im.ref, digest)
	}
	return nil
}
