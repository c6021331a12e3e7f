package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The images the node runs; containerd's sandbox_image (hack/e2e-node.sh)
// and test/e2e/overlay name them.
const (
	pauseImage = "docker.io/local/pause:e2e"
	agentImage = "docker.io/local/persona-agent:e2e"
)

// buildBinaries builds the manager (as bin/cmd), kubectl-persona, the agent
// and pause into bin, static, so that images need nothing beside them.
func buildBinaries(root, bin string) error {
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"./cmd", "./cmd/kubectl-persona", "./test/e2e/agent", "./test/e2e/pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the binaries: %w: %s", err, out)
	}
	return nil
}

// writeImages writes the pause and agent images as OCI image layout tarballs
// into dir, for `ctr images import`.
func writeImages(bin, turnFile, dir string) ([]string, error) {
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
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(im.ref)+".tar")
		if err := writeImage(path, im.ref, im.entrypoint, im.files); err != nil {
			return nil, fmt.Errorf("image %s: %w", im.ref, err)
		}
		tarballs = append(tarballs, path)
	}
	return tarballs, nil
}

// writeImage writes an image of one layer holding files (name in the image
// to path here) that runs entrypoint, as an OCI image layout in a tarball;
// the annotation io.containerd.image.name names it for ctr.
func writeImage(path, ref, entrypoint string, files map[string]string) error {
	layerTar, err := tarOf(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{entrypoint}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), "layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = l.AppendImage(img,
		layout.WithAnnotations(map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:]}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return err
	}
	return tarDir(dir, path)
}

// tarOf is a tar of files, executable and owned by root.
func tarOf(files map[string]string) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		raw, err := os.ReadFile(files[name])
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(raw)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(raw); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

// tarDir writes the files under dir into the tarball path.
func tarDir(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		if hdr.Name, err = filepath.Rel(dir, p); err != nil {
			return err
		}
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil || info.IsDir() {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
