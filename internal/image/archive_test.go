package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestWriteArchiveIsAnImageLayoutContainerdNames writes an image and reads
// the tarball back as an OCI image layout: one manifest, named for
// containerd and by tag, of the same digest and config.
func TestWriteArchiveIsAnImageLayoutContainerdNames(t *testing.T) {
	dir := t.TempDir()
	img, err := Build([]File{{Name: "run", Data: []byte("x"), Mode: 0o755}},
		Config{Entrypoint: []string{"/run"}, User: "65532:65532"}, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.tar")
	const ref = "registry.example/team/run:v1.2.3"
	if err := WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	extracted := filepath.Join(dir, "layout")
	untar(t, archive, extracted)
	index, err := layout.ImageIndexFromPath(extracted)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 {
		t.Fatalf("the layout holds %d manifests, not one", len(manifest.Manifests))
	}
	desc := manifest.Manifests[0]
	if got := desc.Annotations["io.containerd.image.name"]; got != ref {
		t.Errorf("io.containerd.image.name %q, want %q", got, ref)
	}
	if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != "v1.2.3" {
		t.Errorf("org.opencontainers.image.ref.name %q, want the tag v1.2.3", got)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != "arm64" {
		t.Errorf("platform %+v, want linux/arm64", desc.Platform)
	}
	want, _ := img.Digest()
	if desc.Digest != want {
		t.Errorf("digest %s, want the image's %s", desc.Digest, want)
	}
	read, err := index.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := read.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/run" {
		t.Errorf("config %+v, want user 65532:65532 running /run", cf.Config)
	}
}

// TestBuildIsReproducible: the same files give the same digest.
func TestBuildIsReproducible(t *testing.T) {
	files := []File{{Name: "b", Data: []byte("2"), Mode: 0o644}, {Name: "a", Dir: true, Mode: 0o755}}
	first, err := Build(files, Config{Entrypoint: []string{"/b"}}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build([]File{files[1], files[0]}, Config{Entrypoint: []string{"/b"}}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := second.Digest()
	if d1 != d2 {
		t.Errorf("digests %s and %s differ for the same files", d1, d2)
	}
}

// TestBuildUncompressedLayerIsThePlainTar: the layer of BuildUncompressed is
// the same tar as Build's, stored as it is, under the media type that says so,
// and the image round-trips through an archive with the same content.
func TestBuildUncompressedLayerIsThePlainTar(t *testing.T) {
	files := []File{{Name: "bin", Dir: true, Mode: 0o755}, {Name: "bin/run", Data: []byte("#!/run\n"), Mode: 0o755}}
	config := Config{Entrypoint: []string{"/bin/run"}, Env: []string{"PATH=/bin"}}
	plain, err := BuildUncompressed(files, config, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	gzipped, err := Build(files, config, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	layers, err := plain.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want one", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCIUncompressedLayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCIUncompressedLayer)
	}
	digest, _ := layers[0].Digest()
	diffID, _ := layers[0].DiffID()
	if digest != diffID {
		t.Errorf("the layer's digest %s is not its diff ID %s: it is stored transformed", digest, diffID)
	}
	gzippedLayers, err := gzipped.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := gzippedLayers[0].DiffID(); diffID != want {
		t.Errorf("diff ID %s, want Build's %s: not the same tar", diffID, want)
	}

	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	if err := WriteArchive(archive, "registry.example/run:v1", plain); err != nil {
		t.Fatal(err)
	}
	untar(t, archive, filepath.Join(dir, "layout"))
	index, err := layout.ImageIndexFromPath(filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plain.Digest()
	read, err := index.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	readLayers, err := read.Layers()
	if err != nil || len(readLayers) != 1 {
		t.Fatalf("%d layers read back (%v), want one", len(readLayers), err)
	}
	if got, _ := readLayers[0].DiffID(); got != diffID {
		t.Errorf("the layer read back has diff ID %s, want %s", got, diffID)
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
