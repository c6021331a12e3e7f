package install

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

const (
	// The namespace and release name the install uses (config/default).
	namespace = "persona-operator-system"
	release   = "persona-operator"
	chartDir  = "dist/chart"
)

// root is the repository.
var root = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// helmBinary is the helm that make test passes in PERSONA_HELM, else the
// newest bin/helm-v*. Without one the test is skipped: make helm installs it.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("PERSONA_HELM"); h != "" {
		if _, err := os.Stat(h); err != nil {
			t.Fatalf("PERSONA_HELM: %v", err)
		}
		return h
	}
	found, _ := filepath.Glob(filepath.Join(root, "bin", "helm-v*"))
	if len(found) == 0 {
		t.Skip("no helm binary: run 'make helm' (make test does), or set PERSONA_HELM")
	}
	sort.Strings(found)
	return found[len(found)-1]
}

// helmTemplate renders the chart as release persona-operator in
// persona-operator-system, CRDs included unless args has --skip-crds, with the given extra arguments
// (e.g. --set x=y). It returns the objects, or helm's error output.
func helmTemplate(t *testing.T, args ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	base := []string{"template", release, filepath.Join(root, chartDir), "--namespace", namespace}
	if !slices.Contains(args, "--skip-crds") {
		base = append(base, "--include-crds")
	}
	cmd := exec.Command(helmBinary(t), append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	objs, err := controlplane.DecodeManifest(&stdout)
	if err != nil {
		t.Fatalf("decode helm template's output: %v", err)
	}
	return objs, nil
}

// renderChart is helmTemplate that fails the test on an error.
func renderChart(t *testing.T, args ...string) objects {
	t.Helper()
	objs, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return index(t, "the chart", objs)
}

// kustomizeBuild builds a kustomization of config/, as kustomize build does.
func kustomizeBuild(t *testing.T, dir string) objects {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs, err := controlplane.DecodeManifest(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("decode kustomize build %s: %v", dir, err)
	}
	return index(t, dir, objs)
}

// readManifest reads a multi-document manifest of the repository.
func readManifest(t *testing.T, path string) objects {
	t.Helper()
	f, err := os.Open(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := controlplane.DecodeManifest(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return index(t, path, objs)
}

// objects are the objects of an install by key (kind/namespace/name).
type objects map[string]*unstructured.Unstructured

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func keyOf(u *unstructured.Unstructured) string {
	return key(u.GetKind(), u.GetNamespace(), u.GetName())
}

func index(t *testing.T, what string, objs []*unstructured.Unstructured) objects {
	t.Helper()
	out := objects{}
	for _, u := range objs {
		k := keyOf(u)
		if _, dup := out[k]; dup {
			t.Errorf("%s has %s twice", what, k)
		}
		out[k] = u
	}
	return out
}

// ofKind returns the objects of the given kinds, by key.
func (o objects) ofKind(kinds ...string) objects {
	out := objects{}
	for k, u := range o {
		for _, kind := range kinds {
			if u.GetKind() == kind {
				out[k] = u
			}
		}
	}
	return out
}

// get returns the object with the key, failing the test without it.
func (o objects) get(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, ok := o[key(kind, ns, name)]
	if !ok {
		t.Fatalf("no %s %s/%s among %s", kind, ns, name, strings.Join(o.keys(), ", "))
	}
	return u
}

func (o objects) has(kind, ns, name string) bool {
	_, ok := o[key(kind, ns, name)]
	return ok
}

func (o objects) keys() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decodeStrict decodes an object into its Go type, failing on fields the
// type does not have; kinds Kubernetes' client does not know (CRDs and
// custom resources) are left alone.
func decodeStrict(t *testing.T, u *unstructured.Unstructured) runtime.Object {
	t.Helper()
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Errorf("%s: %v", keyOf(u), err)
	}
	return obj
}

// field returns the value at a path of a nested map, nil when absent.
func field(obj map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	return v
}
