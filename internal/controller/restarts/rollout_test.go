package restarts

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// argoRolloutObject is a Rollout at generation with spec and status.
func argoRolloutObject(generation int64, spec, status map[string]any) *unstructured.Unstructured {
	u := newWorkload(rolloutKind).(*unstructured.Unstructured)
	u.SetGeneration(generation)
	u.Object["spec"] = spec
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// An Argo Rollouts Rollout reads as its phase, once its status is of its
// generation (which Argo Rollouts writes as a string); a pause, its
// strategy's or spec.paused, is held.
func TestArgoRolloutsReadAsTheirPhase(t *testing.T) {
	for _, c := range []struct {
		name       string
		generation int64
		spec       map[string]any
		status     map[string]any
		want       rollout
	}{
		{"Healthy at its generation", 3, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Healthy"}, rolloutComplete},
		{"Healthy, of the generation before", 4, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Healthy"}, rolloutProgressing},
		{"no status yet", 1, map[string]any{}, nil, rolloutProgressing},
		{"Progressing", 3, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Progressing"}, rolloutProgressing},
		{"Paused at a step of its strategy", 3, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Paused"}, rolloutHeld},
		{"spec.paused", 4, map[string]any{"paused": true}, map[string]any{"observedGeneration": "3", "phase": "Progressing"}, rolloutHeld},
		{"Degraded", 3, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Degraded", "message": "RolloutAborted: metric failed"}, rolloutFailed},
	} {
		if got := rolloutOf(argoRolloutObject(c.generation, c.spec, c.status)); got != c.want {
			t.Errorf("%s: read as %d, want %d", c.name, got, c.want)
		}
	}
	failed := argoRolloutObject(3, map[string]any{}, map[string]any{"observedGeneration": "3", "phase": "Degraded", "message": "RolloutAborted: metric failed"})
	if got := failureOf(failed); got != "Degraded: RolloutAborted: metric failed" {
		t.Errorf("the failure of a Degraded Rollout reads %q", got)
	}
}

// A Rollout names its Persona on its pod template as a Deployment does; one
// that takes its template from another workload cannot be restarted, and
// says which to label.
func TestRolloutTemplates(t *testing.T) {
	own := argoRolloutObject(1, map[string]any{"template": map[string]any{"metadata": map[string]any{
		"labels": map[string]any{delivery.PersonaLabel: "reviewer", "app": "agent"}}}}, nil)
	if got := workloadPersona(own); got != "reviewer" {
		t.Errorf("the Persona a Rollout's template names reads %q", got)
	}
	if why := templateElsewhere(own); why != "" {
		t.Errorf("a Rollout with its own template: %q", why)
	}
	referenced := argoRolloutObject(1, map[string]any{"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "agent"}}, nil)
	if why := templateElsewhere(referenced); !strings.Contains(why, "Deployment agent") {
		t.Errorf("a Rollout with spec.workloadRef: %q, want it to name Deployment agent", why)
	}
}
