package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/persona-operator/persona-operator/internal/manifest"
)

// source is where a command reads manifests from: files and directories
// (-f) or a kustomization (-k), as with kubectl.
type source struct {
	files         []string
	kustomization string
}

const (
	filenameUsage  = "manifest file or directory `PATH`, - for standard input (repeatable; a,b for several)"
	kustomizeUsage = "build the kustomization in `DIR` (as kubectl kustomize) and read its output"
)

// addFlags adds -f and -k to cmd.
func (s *source) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&s.files, "filename", "f", nil, filenameUsage)
	cmd.Flags().StringVarP(&s.kustomization, "kustomize", "k", "", kustomizeUsage)
	_ = cmd.MarkFlagDirname("kustomize")
}

func (s *source) empty() bool { return len(s.files) == 0 && s.kustomization == "" }

// check takes the paths a shell glob put after -f and rejects -f with -k.
func (s *source) check(fFlag, kFlag string, args []string) error {
	if len(s.files) > 0 && s.kustomization != "" {
		return usageError("%s and %s are mutually exclusive: read either manifests or a kustomization", fFlag, kFlag)
	}
	if len(args) > 0 && len(s.files) == 0 {
		return usageError("unexpected arguments %q: give manifests with %s PATH or a kustomization with %s DIR", args, fFlag, kFlag)
	}
	s.files = append(splitPaths(s.files), args...)
	return nil
}

// describe names the source in messages, by the flags that gave it.
func (s *source) describe(fFlag, kFlag string) string {
	if s.kustomization != "" {
		return fmt.Sprintf("the kustomization %s (%s)", s.kustomization, kFlag)
	}
	return "the manifests of " + fFlag
}

func (s *source) readsStdin() bool {
	for _, f := range s.files {
		if f == manifest.Stdin {
			return true
		}
	}
	return false
}

// read reads the manifests; objects without a namespace are in namespace.
// A path that cannot be read or a kustomization that does not build is an
// error naming it.
func (s *source) read(namespace string, stdin io.Reader) (*manifest.Set, error) {
	if s.kustomization == "" {
		return manifest.Read(s.files, manifest.Options{Namespace: namespace, Stdin: stdin})
	}
	resources, err := buildKustomization(s.kustomization)
	if err != nil {
		return nil, err
	}
	set := manifest.New(namespace)
	// Problems name the file each object came from (kustomize's origin
	// annotations), or the kustomization when it generated the object.
	if err := addBuild(set, s.kustomization, resources); err != nil {
		return nil, fmt.Errorf("the kustomization %s: %w", s.kustomization, err)
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
