// Package image builds container images from files on this machine, without a
// container engine: the release's images (make image) and the images the e2e
// suite runs on its node.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of an image's filesystem.
type File struct {
	// Name is the path in the image, without a leading slash.
	Name string
	// Source is the file on this machine that holds the content; when it is
	// empty, Data is the content, or the entry is a directory when Dir is set.
	Source string
	Data   []byte
	Dir    bool
	// Mode holds the permission bits (and sticky bit) of the entry.
	Mode     int64
	UID, GID int
}

// Config is what the image runs.
type Config struct {
	Entrypoint []string
	// User is "uid:gid", as a Dockerfile's USER.
	User       string
	WorkingDir string
	Env        []string
}

// Build is an image for linux/arch of one layer holding files, that runs as
// config says. Entries are written in name order with a zero time, so the
// same files give the same image digest.
func Build(files []File, config Config, arch string) (v1.Image, error) {
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return withConfig(layer, config, arch)
}

// BuildUncompressed is Build with its layer stored as a plain tar: for an
// image of hundreds of megabytes that a local runtime imports right away,
// gzip costs more time, on both sides, than the bytes it saves.
func BuildUncompressed(files []File, config Config, arch string) (v1.Image, error) {
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	return withConfig(static.NewLayer(layerTar, types.OCIUncompressedLayer), config, arch)
}

// withConfig is the image of the one layer that runs as config says.
func withConfig(layer v1.Layer, config Config, arch string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Entrypoint = config.Entrypoint
	cf.Config.User = config.User
	cf.Config.WorkingDir = config.WorkingDir
	cf.Config.Env = config.Env
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// tarOf is a tar of files, in name order, every directory before its files.
func tarOf(files []File) ([]byte, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		hdr := &tar.Header{Name: f.Name, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.Dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.Name+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			continue
		}
		data := f.Data
		if f.Source != "" {
			raw, err := os.ReadFile(f.Source)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			data = raw
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}
