package image

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteArchive writes img, named ref, as an OCI image layout in the tarball
// path: what `ctr images import`, `kind load image-archive`, `podman load`
// and `skopeo copy oci-archive:` read. The annotation io.containerd.image.name
// gives containerd the full name, org.opencontainers.image.ref.name the tag.
func WriteArchive(path, ref string, img v1.Image) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = l.AppendImage(img,
		layout.WithAnnotations(map[string]string{
			"io.containerd.image.name":          ref,
			"org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:],
		}),
		layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture}))
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	return tarDir(dir, path)
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
