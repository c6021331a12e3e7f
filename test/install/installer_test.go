package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// dist/install.yaml is config/default as make build-installer builds it: the
// same objects, but for the manager's image, which it sets. A failure here
// means config/ changed after dist/ was made: run make build-installer.
func TestInstallerIsCurrent(t *testing.T) {
	installer := readManifest(t, "dist/install.yaml")
	config := kustomizeBuild(t, "config/default")
	for _, u := range installer {
		decodeStrict(t, u)
	}

	image := func(o objects) (string, *unstructured.Unstructured) {
		for _, d := range o.ofKind("Deployment") {
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				if c := c.(map[string]any); c["name"] == "manager" {
					return c["image"].(string), d
				}
			}
		}
		t.Fatal("no Deployment with a container named manager")
		return "", nil
	}
	img, _ := image(installer)
	configImg, configDeployment := image(config)
	if img == configImg || !strings.Contains(img, "/") {
		t.Errorf("dist/install.yaml runs the image %q: make build-installer IMG=... sets it", img)
	}
	// The image set, config/default is what dist/install.yaml must hold.
	containers, _, _ := unstructured.NestedSlice(configDeployment.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if c := c.(map[string]any); c["name"] == "manager" {
			c["image"] = img
		}
	}
	_ = unstructured.SetNestedSlice(configDeployment.Object, containers, "spec", "template", "spec", "containers")

	stale := false
	for _, k := range union(config, installer) {
		c, i := config[k], installer[k]
		switch {
		case i == nil:
			t.Errorf("dist/install.yaml lacks %s", k)
		case c == nil:
			t.Errorf("dist/install.yaml has %s, which config/default no longer does", k)
		default:
			if d := diff(c.Object, i.Object); len(d) > 0 {
				t.Errorf("%s differs (config/default ≠ dist/install.yaml):\n  %s", k, strings.Join(d, "\n  "))
			} else {
				continue
			}
		}
		stale = true
	}
	if stale {
		t.Errorf("dist/install.yaml is stale: run make build-installer (IMG defaults to the release's image)")
	}

	// One kubectl apply installs everything.
	for _, kind := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
		"Role", "RoleBinding", "Deployment", "Service", "ValidatingWebhookConfiguration", "PodDisruptionBudget"} {
		if len(installer.ofKind(kind)) == 0 {
			t.Errorf("dist/install.yaml has no %s", kind)
		}
	}
}

// dist/chart/crds holds config/crd/bases as they are: make chart copies them.
func TestChartCRDsAreConfigs(t *testing.T) {
	read := func(dir string) map[string][]byte {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = b
		}
		return out
	}
	config, chart := read("config/crd/bases"), read(chartDir+"/crds")
	if len(config) == 0 {
		t.Fatal("config/crd/bases has no CRDs")
	}
	for name, b := range config {
		if c, ok := chart[name]; !ok {
			t.Errorf("%s/crds lacks %s: run make chart", chartDir, name)
		} else if !bytes.Equal(b, c) {
			t.Errorf("%s/crds/%s differs from config/crd/bases: run make chart", chartDir, name)
		}
	}
	for name := range chart {
		if _, ok := config[name]; !ok {
			t.Errorf("%s/crds/%s is not in config/crd/bases: run make chart", chartDir, name)
		}
	}
}
