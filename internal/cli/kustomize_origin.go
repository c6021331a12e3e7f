package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/internal/manifest"
)

// originFS is the disk with the root kustomization asking for kustomize's
// origin annotations (buildMetadata: [originAnnotations]), which say which
// file each resource came from. krusty has no option for them; the
// kustomization's own field is the one switch.
type originFS struct {
	filesys.FileSystem
	root string
}

func (f originFS) ReadFile(path string) ([]byte, error) {
	raw, err := f.FileSystem.ReadFile(path)
	if err != nil || !f.isRootKustomization(path) {
		return raw, err
	}
	var k map[string]any
	if yaml.Unmarshal(raw, &k) != nil || k == nil {
		// kustomize reports what is wrong with it.
		return raw, nil
	}
	meta, _ := k["buildMetadata"].([]any)
	if slices.Contains(meta, any(types.OriginAnnotations)) {
		return raw, nil
	}
	k["buildMetadata"] = append(meta, types.OriginAnnotations)
	return yaml.Marshal(k)
}

func (f originFS) isRootKustomization(path string) bool {
	dir, name := filepath.Split(filepath.Clean(path))
	return filepath.Clean(dir) == f.root && slices.Contains(konfig.RecognizedKustomizationFileNames(), name)
}

// addBuild adds the resources of a kustomize build to set, each with the
// file and document it came from: the manifest it was read from, or the
// kustomization whose generator made it. The origin annotation is removed,
// so the objects are those kubectl kustomize prints.
func addBuild(set *manifest.Set, dir string, m resmap.ResMap) error {
	docIndex := map[string][]*manifest.Object{}
	for _, res := range m.Resources() {
		origin, err := res.GetOrigin()
		if err != nil {
			return err
		}
		if err := res.SetOrigin(nil); err != nil {
			return err
		}
		raw, err := res.AsYAML()
		if err != nil {
			return err
		}
		file, doc := dir, 1
		switch {
		case origin == nil || origin.Repo != "":
			// A remote base: its files are not on this disk.
		case origin.ConfiguredIn != "":
			file = filepath.Join(dir, origin.ConfiguredIn)
		case origin.Path != "":
			file = filepath.Join(dir, origin.Path)
			doc = documentOf(docIndex, file, res)
		}
		set.AddDocument(file, doc, raw)
	}
	return nil
}

// documentOf is the 1-based index of the document of file that holds res
// as written, 1 when it cannot be told. krusty drops the names an object had
// before its transformers ran, so an object is found by its kind and name:
// the name as written, or else the one name of its kind in the file that
// the built name contains, as namePrefix and nameSuffix keep it. The
// documents of each file are read once.
func documentOf(cache map[string][]*manifest.Object, file string, res *resource.Resource) int {
	objects, ok := cache[file]
	if !ok {
		if raw, err := os.ReadFile(file); err == nil {
			set := manifest.New("")
			set.Add(file, raw)
			objects = set.Objects()
		}
		cache[file] = objects
	}
	kind, name := res.GetKind(), res.GetName()
	var within []*manifest.Object
	for _, o := range objects {
		switch {
		case o.Kind != kind || o.Name == "":
		case o.Name == name:
			return o.Origin.Doc
		case strings.Contains(name, o.Name):
			within = append(within, o)
		}
	}
	if len(within) == 1 {
		return within[0].Origin.Doc
	}
	return 1
}
