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
		name: "pinned",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Pinned, message: pinned to revision 2}
- {type: Pinned, status: "True", observedGeneration: 3, reason: Pinned, message: ConfigMap persona-assistant holds revision 2}`,
		wantStatus: "Suspended", wantMsg: "pinned to revision 2",
	}, {
		name: "a pin not honoured",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Rendered, message: ConfigMap persona-assistant holds the render}
- {type: Pinned, status: "False", observedGeneration: 3, reason: RevisionNotFound, message: revision 9 has no snapshot}`,
		wantStatus: "Healthy", wantMsg: "ConfigMap persona-assistant holds the render",
	}, {
		name: "a canary at a step",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Rendered, message: ConfigMap persona-assistant holds stable revision 2}
- {type: Canary, status: "True", observedGeneration: 3, reason: Progressing, message: "canary revision 3 at 10% of new pods, step 1 of 3"}
- {type: Reconciling, status: "False", observedGeneration: 3, reason: Rendered, message: ""}`,
		wantStatus: "Progressing", wantMsg: "canary revision 3 at 10% of new pods, step 1 of 3",
	}, {
		name: "a canary paused for a promote",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Rendered, message: ConfigMap persona-assistant holds stable revision 2}
- {type: Canary, status: "True", observedGeneration: 3, reason: Paused, message: "canary revision 3 at 10% of new pods, step 1 of 3: paused at step 1 until kubectl persona promote"}`,
		wantStatus: "Suspended", wantMsg: "canary revision 3 at 10% of new pods, step 1 of 3: paused at step 1 until kubectl persona promote",
	}, {
		name: "a canary aborted",
		status: `
observedGeneration: 3
conditions:
- {type: Ready, status: "True", observedGeneration: 3, reason: Rendered, message: ConfigMap persona-assistant holds stable revision 2}
- {type: Canary, status: "False", observedGeneration: 3, reason: Aborted, message: "the canary of revision 3 was aborted: AnalysisRun assistant-r3-s2 is Failed"}`,
		wantStatus: "Degraded", wantMsg: "the canary of revision 3 was aborted: AnalysisRun assistant-r3-s2 is Failed",
	}, {
		name: "a canary stalled",
		status: `
observedGeneration: 3
conditions:
- {type: Canary, status: "True", observedGeneration: 3, reason: Progressing, message: "canary revision 3"}
- {type: Stalled, status: "True", observedGeneration: 3, reason: InheritanceCycle, message: a inherits a}`,
		wantStatus: "Degraded", wantMsg: "InheritanceCycle: a inherits a",
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
	forms, err := Forms(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// The script as each form installs it, under each kind's key.
	for form, data := range forms {
		for _, kind := range kinds {
			script, ok := data[HealthKey(kind)]
			if !ok {
				t.Errorf("%s: no key %s", form, HealthKey(kind))
				continue
			}
			for _, tc := range cases {
				t.Run(form+"/"+kind+"/"+tc.name, func(t *testing.T) {
					check(t, script, kind, tc.status, tc.wantStatus, tc.wantMsg)
				})
			}
		}
	}
	// And health.lua itself, which test/integration/controllers checks against kstatus.
	for _, tc := range cases {
		t.Run("health.lua/"+tc.name, func(t *testing.T) {
			check(t, script, "Persona", tc.status, tc.wantStatus, tc.wantMsg)
		})
	}
}

// kinds are the kinds of the API, each with its own argocd-cm key.
var kinds = []string{"Persona", "PromptLayer", "ClusterPromptLayer", "PromptPlatform"}

func check(t *testing.T, script, kind, status, wantStatus, wantMsg string) {
	t.Helper()
	got, msg, err := Health(script, object(t, kind, status))
	if err != nil {
		t.Fatal(err)
	}
	if got != wantStatus || msg != wantMsg {
		t.Errorf("got %s %q, want %s %q", got, msg, wantStatus, wantMsg)
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

// Both forms install, under each kind's key, exactly health.lua, and the Helm
// values nothing else: an edit of the script reaches both or the test fails.
func TestFormsCarryTheSameScript(t *testing.T) {
	script, err := Script(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	forms, err := Forms(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 2 {
		t.Fatalf("forms %v, want the kustomize Component and the Helm values", slices.Sorted(maps.Keys(forms)))
	}
	for form, data := range forms {
		for _, kind := range kinds {
			if got := data[HealthKey(kind)]; got != script {
				t.Errorf("%s: %s is not health.lua (%d bytes, health.lua %d): copy health.lua into it",
					form, HealthKey(kind), len(got), len(script))
			}
		}
	}
	helm := forms["Helm values"]
	if len(helm) != len(kinds) {
		t.Errorf("Helm values set %v, want only the %d health keys", slices.Sorted(maps.Keys(helm)), len(kinds))
	}
}
