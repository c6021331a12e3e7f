package argocd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

// object is a resource of kind at generation 3 with the given status YAML.
func object(t *testing.T, kind, status string) map[string]any {
	t.Helper()
	doc := fmt.Sprintf(`
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: %s
metadata: {name: assistant, namespace: team, generation: 3}
`, kind)
	if status != "" {
		doc += "status:\n  " + strings.ReplaceAll(strings.TrimSpace(status), "\n", "\n  ") + "\n"
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return obj
}

func TestHealth(t *testing.T) {
	script, err := Script(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, status        string
		wantStatus, wantMsg string
	}{{
		name:       "no status yet",
		wantStatus: "Progressing", wantMsg: "waiting for the controller to report status",
	}, {
		name:       "no conditions yet",
		status:     "observedGeneration: 3\nconditions: []",
		wantStatus: "Progressing", wantMsg: "waiting for the controller to report status",
	}, {
		name: "observedGeneration behind",
		status: `
observedGeneration: 2
conditions:
- {type: Ready, status: "True", observedGeneration: 2, reason: Rendered, message: old render}`,
		wantStatus: "Progressing", wantMsg: "waiting for the controller to observe generation 3",
	}, {
		name: "reconciling while a reference is awaited",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "False", observedGeneration: 3, reason: ReferenceNotFound, message: PromptLayer base not found}
- {type: Reconciling, status: "True", observedGeneration: 3, reason: ReferenceNotFound, message: waiting for PromptLayer base}`,
		wantStatus: "Progressing", wantMsg: "waiting for PromptLayer base",
	}, {
		name: "stalled",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "False", observedGeneration: 3, reason: ReferenceNotFound, message: PromptLayer base not found}
- {type: Stalled, status: "True", observedGeneration: 3, reason: ReferenceNotFound, message: PromptLayer base not found}`,
		wantStatus: "Degraded", wantMsg: "ReferenceNotFound: PromptLayer base not found",
	}, {
		name: "stalled wins over reconciling",
		status: `
observedGeneration: 3
conditions:
- {type: Reconciling, status: "True", observedGeneration: 3, reason: Progressing, message: rendering}
- {type: Stalled, status: "True", observedGeneration: 3, reason: InheritanceCycle, message: a inherits a}`,
		wantStatus: "Degraded", wantMsg: "InheritanceCycle: a inherits a",
	}, {
		name: "stalled for an older spec",
		status: `
observedGeneration: 2
conditions:
- {type: Stalled, status: "True", observedGeneration: 2, reason: ReferenceNotFound, message: PromptLayer base not found}`,
		wantStatus: "Progressing", wantMsg: "waiting for the controller to observe generation 3",
	}, {
		name: "ready for the current generation",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Rendered, message: ConfigMap persona-assistant holds the render}
- {type: Reconciling, status: "False", observedGeneration: 3, reason: Rendered, message: ""}`,
		wantStatus: "Healthy", wantMsg: "ConfigMap persona-assistant holds the render",
	}, {
		name: "ready for a stale generation",
		status: `
conditions:
- {type: Ready, status: "True", observedGeneration: 2, reason: Rendered, message: old render}`,
		wantStatus: "Progressing", wantMsg: "waiting for the controller to observe generation 3",
	}, {
		name: "ready false alone",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "False", observedGeneration: 3, reason: TemplateInvalid, message: template does not parse}`,
		wantStatus: "Degraded", wantMsg: "template does not parse",
	}, {
		name: "ready unknown",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: Unknown, observedGeneration: 3, reason: Pending, message: not rendered yet}`,
		wantStatus: "Progressing", wantMsg: "not rendered yet",
	}}
	for _, kind := range []string{"Persona", "PromptLayer", "ClusterPromptLayer", "PromptPlatform"} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				status, msg, err := Health(script, object(t, kind, tc.status))
				if err != nil {
					t.Fatal(err)
				}
				if status != tc.wantStatus || msg != tc.wantMsg {
					t.Errorf("got %s %q, want %s %q", status, msg, tc.wantStatus, tc.wantMsg)
				}
			})
		}
	}
}

func TestHealthRejectsBrokenScripts(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"generation": 1}}
	for name, script := range map[string]string{
		"loops":            "while true do end",
		"returns no table": "return 'Healthy'",
		"invalid status":   "return {status = 'Fine'}",
		"uses os":          "return {status = os.getenv('HOME')}",
	} {
		if _, _, err := Health(script, obj); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPatchKeys(t *testing.T) {
	script, err := Script(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	data, err := PatchKeys(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"url": "https://argocd.example.com", // from the base: merged, not replaced
		"resource.customizations.health.prompts.persona-operator.dev_Persona":            script,
		"resource.customizations.health.prompts.persona-operator.dev_PromptLayer":        script,
		"resource.customizations.health.prompts.persona-operator.dev_ClusterPromptLayer": script,
		"resource.customizations.health.prompts.persona-operator.dev_PromptPlatform":     script,
	}
	if !maps.Equal(data, want) {
		t.Errorf("argocd-cm data keys %v, want %v (each health key equal to health.lua)",
			slices.Sorted(maps.Keys(data)), slices.Sorted(maps.Keys(want)))
	}
}
