package install

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The installs that must be alike: a kustomization of config/, and the chart
// with the values that mirror it.
var mirrors = []struct {
	name, kustomization string
	values              []string
}{
	{"default", "config/default", nil},
	{"cert-manager", "config/default-certmanager", []string{"--set", "certManager.enabled=true"}},
	{"restart-workloads", "config/default-restart-workloads", []string{"--set", "restartWorkloads.enabled=true"}},
	{"release-analysis", "config/default-release-analysis", []string{"--set", "releaseAnalysis.enabled=true"}},
}

// onlyInConfig are the objects config/ installs and the chart, on purpose,
// does not.
var onlyInConfig = map[string]string{
	key("Namespace", "", namespace): "helm makes the release namespace (helm install --create-namespace)",
}

// TestChartMatchesConfig checks that the chart installs what config/ does:
// the same objects under the same names; the same CRDs; per Role and
// ClusterRole the same rights (rules compared as sets of the rights they
// grant) and aggregation labels; the same bindings; the same webhooks (rules,
// failurePolicy, sideEffects, timeoutSeconds, admissionReviewVersions,
// clientConfig, whole); the same Deployment (but for labels and the image);
// and the same Services, PodDisruptionBudget, Secret and cert-manager objects.
func TestChartMatchesConfig(t *testing.T) {
	for _, m := range mirrors {
		t.Run(m.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(root, m.kustomization, "kustomization.yaml")); err != nil {
				t.Fatalf("%s: %v", m.kustomization, err)
			}
			config := kustomizeBuild(t, m.kustomization)
			chart := renderChart(t, m.values...)
			from := fmt.Sprintf("%s, chart (helm template %s)", m.kustomization, strings.Join(m.values, " "))
			t.Logf("comparing %s", from)

			t.Run("objects", func(t *testing.T) { compareInventory(t, config, chart) })
			t.Run("CRDs", func(t *testing.T) {
				compareWhole(t, config.ofKind("CustomResourceDefinition"), chart.ofKind("CustomResourceDefinition"), nil)
			})
			t.Run("RBAC rules", func(t *testing.T) { compareRoles(t, config, chart) })
			t.Run("RBAC bindings", func(t *testing.T) { compareBindings(t, config, chart) })
			t.Run("webhooks", func(t *testing.T) { compareWebhooks(t, config, chart) })
			t.Run("Deployment", func(t *testing.T) {
				compareWhole(t, config.ofKind("Deployment"), chart.ofKind("Deployment"), normalizeDeployment)
			})
			t.Run("other objects", func(t *testing.T) {
				handled := map[string]bool{"CustomResourceDefinition": true, "Role": true, "ClusterRole": true, "RoleBinding": true,
					"ClusterRoleBinding": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
					"Deployment": true, "Namespace": true}
				rest := func(o objects) objects {
					out := objects{}
					for k, u := range o {
						if !handled[u.GetKind()] {
							out[k] = u
						}
					}
					return out
				}
				compareWhole(t, rest(config), rest(chart), nil)
			})
		})
	}
}

// compareInventory checks that both install the same objects, by kind,
// namespace and name.
func compareInventory(t *testing.T, config, chart objects) {
	for _, k := range config.keys() {
		if _, ok := chart[k]; !ok && onlyInConfig[k] == "" {
			t.Errorf("config/ has %s, the chart does not", k)
		}
	}
	for _, k := range chart.keys() {
		if _, ok := config[k]; !ok {
			t.Errorf("the chart has %s, config/ does not", k)
		}
	}
}

// compareWhole compares the objects both have, without their metadata,
// after normalize (which works on a copy).
func compareWhole(t *testing.T, config, chart objects, normalize func(map[string]any)) {
	t.Helper()
	if len(config) == 0 && len(chart) == 0 {
		return
	}
	for _, k := range config.keys() {
		c, ok := chart[k]
		if !ok {
			continue // compareInventory reports it
		}
		a, b := withoutMetadata(config[k]), withoutMetadata(c)
		if normalize != nil {
			normalize(a)
			normalize(b)
		}
		if d := diff(a, b); len(d) > 0 {
			t.Errorf("%s differs (config/ ≠ chart):\n  %s", k, strings.Join(d, "\n  "))
		}
	}
}

func withoutMetadata(u *unstructured.Unstructured) map[string]any {
	out := u.DeepCopy().Object
	delete(out, "metadata")
	delete(out, "status")
	return out
}

// normalizeDeployment drops what the chart sets on purpose otherwise: the
// pod's labels (it adds Helm's; the selector is still compared) and the
// image, and sorts the arguments, whose order does not matter.
func normalizeDeployment(d map[string]any) {
	unstructured.RemoveNestedField(d, "spec", "template", "metadata", "labels")
	containers, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c := c.(map[string]any)
		delete(c, "image")
		delete(c, "imagePullPolicy")
		if args, ok := c["args"].([]any); ok {
			sort.Slice(args, func(i, j int) bool { return fmt.Sprint(args[i]) < fmt.Sprint(args[j]) })
		}
	}
	_ = unstructured.SetNestedSlice(d, containers, "spec", "template", "spec", "containers")
}

// compareRoles compares each Role and ClusterRole: the rights its rules
// grant, as a set, its aggregation labels and its aggregationRule.
func compareRoles(t *testing.T, config, chart objects) {
	cr, hr := config.ofKind("Role", "ClusterRole"), chart.ofKind("Role", "ClusterRole")
	for _, k := range union(cr, hr) {
		c, h := cr[k], hr[k]
		switch {
		case h == nil:
			t.Errorf("%s: in config/, not in the chart; it grants:\n  %s", k, strings.Join(setDiff(ruleAtoms(asList(c.Object["rules"])), nil), "\n  "))
			continue
		case c == nil:
			t.Errorf("%s: in the chart, not in config/; it grants:\n  %s", k, strings.Join(setDiff(ruleAtoms(asList(h.Object["rules"])), nil), "\n  "))
			continue
		}
		ca, ha := ruleAtoms(asList(c.Object["rules"])), ruleAtoms(asList(h.Object["rules"]))
		if missing := setDiff(ca, ha); len(missing) > 0 {
			t.Errorf("%s: config/ grants, the chart does not:\n  %s", k, strings.Join(missing, "\n  "))
		}
		if extra := setDiff(ha, ca); len(extra) > 0 {
			t.Errorf("%s: the chart grants, config/ does not:\n  %s", k, strings.Join(extra, "\n  "))
		}
		if d := diff(aggregation(c), aggregation(h)); len(d) > 0 {
			t.Errorf("%s: aggregation differs (config/ ≠ chart):\n  %s", k, strings.Join(d, "\n  "))
		}
	}
}

// aggregation is what aggregates a role into others, or others into it.
func aggregation(u *unstructured.Unstructured) map[string]any {
	labels := map[string]any{}
	for k, v := range u.GetLabels() {
		if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
			labels[k] = v
		}
	}
	return map[string]any{"labels": labels, "aggregationRule": u.Object["aggregationRule"]}
}

// compareBindings compares each RoleBinding and ClusterRoleBinding: its
// roleRef and its subjects, as a set.
func compareBindings(t *testing.T, config, chart objects) {
	cb, hb := config.ofKind("RoleBinding", "ClusterRoleBinding"), chart.ofKind("RoleBinding", "ClusterRoleBinding")
	for _, k := range union(cb, hb) {
		c, h := cb[k], hb[k]
		if c == nil || h == nil {
			continue // compareInventory reports it
		}
		if d := diff(c.Object["roleRef"], h.Object["roleRef"]); len(d) > 0 {
			t.Errorf("%s: roleRef differs (config/ ≠ chart):\n  %s", k, strings.Join(d, "\n  "))
		}
		cs, hs := subjects(c), subjects(h)
		if missing := setDiff(cs, hs); len(missing) > 0 {
			t.Errorf("%s: subjects in config/, not in the chart: %s", k, strings.Join(missing, ", "))
		}
		if extra := setDiff(hs, cs); len(extra) > 0 {
			t.Errorf("%s: subjects in the chart, not in config/: %s", k, strings.Join(extra, ", "))
		}
	}
}

func subjects(u *unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, s := range asList(u.Object["subjects"]) {
		s, _ := s.(map[string]any)
		out[fmt.Sprintf("%v %v/%v", s["kind"], s["namespace"], s["name"])] = true
	}
	return out
}

// compareWebhooks compares each webhook configuration: its annotations (the
// CA injection's), and each webhook, by name, whole.
func compareWebhooks(t *testing.T, config, chart objects) {
	kinds := []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
	cw, hw := config.ofKind(kinds...), chart.ofKind(kinds...)
	if len(cw) == 0 {
		t.Errorf("config/ has no webhook configuration")
	}
	for _, k := range union(cw, hw) {
		c, h := cw[k], hw[k]
		if c == nil || h == nil {
			continue // compareInventory reports it
		}
		if d := diff(anyMap(c.GetAnnotations()), anyMap(h.GetAnnotations())); len(d) > 0 {
			t.Errorf("%s: annotations differ (config/ ≠ chart):\n  %s", k, strings.Join(d, "\n  "))
		}
		ch, hh := webhooksByName(c), webhooksByName(h)
		for _, name := range union(ch, hh) {
			a, b := ch[name], hh[name]
			switch {
			case b == nil:
				t.Errorf("%s: webhook %s in config/, not in the chart", k, name)
			case a == nil:
				t.Errorf("%s: webhook %s in the chart, not in config/", k, name)
			default:
				if d := diff(a, b); len(d) > 0 {
					t.Errorf("%s: webhook %s differs (config/ ≠ chart):\n  %s", k, name, strings.Join(d, "\n  "))
				}
			}
		}
	}
}

func webhooksByName(u *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, w := range asList(u.Object["webhooks"]) {
		w, _ := w.(map[string]any)
		out[fmt.Sprint(w["name"])] = w
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// union is the keys of a and b, sorted.
func union[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
