package cli

import (
	"fmt"
	"io"

	"path/filepath"

	"github.com/spf13/cobra"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/persona-operator/persona-operator/internal/manifest"
)

// source is where a command reads manifests from: files and directories
// (-f) and kustomizations (-k), as with kubectl; several of each combine
// into one set (a platform directory and a team's kustomization).
type source struct {
	files          []string
	kustomizations []string
}

const (
	filenameUsage  = "manifest file or directory `PATH`, - for standard input (repeatable; a,b for several)"
	kustomizeUsage = "build the kustomization in `DIR` (as kubectl kustomize) and read its output (repeatable)"
)

// addFlags adds -f and -k to cmd.
func (s *source) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&s.files, "filename", "f", nil, filenameUsage)
	cmd.Flags().StringArrayVarP(&s.kustomizations, "kustomize", "k", nil, kustomizeUsage)
	_ = cmd.MarkFlagDirname("kustomize")
}

func (s *source) empty() bool { return len(s.files) == 0 && len(s.kustomizations) == 0 }

// check takes the paths a shell glob put after -f.
func (s *source) check(fFlag, kFlag string, args []string) error {
	if len(args) > 0 && len(s.files) == 0 {
		return usageError("unexpected arguments %q: give manifests with %s PATH or a kustomization with %s DIR", args, fFlag, kFlag)
	}
	s.files = append(splitPaths(s.files), args...)
	return nil
}

// describe names the source in messages, by the flags that gave it.
func (s *source) describe(fFlag, kFlag string) string {
	switch {
	case len(s.files) == 0 && len(s.kustomizations) == 1:
		return fmt.Sprintf("the kustomization %s (%s)", s.kustomizations[0], kFlag)
	case len(s.kustomizations) == 0:
		return "the manifests of " + fFlag
	case len(s.files) == 0:
		return "the kustomizations of " + kFlag
	}
	return fmt.Sprintf("the manifests of %s and %s", fFlag, kFlag)
}

func (s *source) readsStdin() bool {
	for _, f := range s.files {
		if f == manifest.Stdin {
			return true
		}
	}
	return false
}

// read reads the manifests, then what each kustomization builds, into one
// set; objects without a namespace are in namespace. A path that cannot be
// read or a kustomization that does not build is an error naming it.
func (s *source) read(namespace string, stdin io.Reader) (*manifest.Set, error) {
	set, err := manifest.Read(s.files, manifest.Options{Namespace: namespace, Stdin: stdin})
	if err != nil {
		return nil, err
	}
	for _, dir := range s.kustomizations {
		resources, err := buildKustomization(dir)
		if err != nil {
			return nil, err
		}
		// Problems name the file each object came from (kustomize's origin
		// annotations), or the kustomization when it generated the object.
		if err := addBuild(set, dir, resources); err != nil {
			return nil, fmt.Errorf("the kustomization %s: %w", dir, err)
		}
	}
	return set, nil
}

// buildKustomization builds the kustomization in dir in-process, as
// kubectl kustomize does: no plugins, files only from within dir's tree.
func buildKustomization(dir string) (resmap.ResMap, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fs := originFS{FileSystem: filesys.MakeFsOnDisk(), root: root}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, root)
	if err != nil {
		return nil, fmt.Errorf("the kustomization %s does not build: %w", dir, err)
	}
	return resources, nil
}
