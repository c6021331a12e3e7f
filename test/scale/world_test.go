package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The offline render carries the round's ClusterPromptLayer, as the
// controller's does, and its edit changes every hash.
func TestOfflineRendersGuardrail(t *testing.T) {
	w, err := newWorld("scale-converge-1", 1, 3, true, created)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range w.renders {
		if prompt := r.configMap.Data[render.SystemPromptKey]; !strings.Contains(prompt, "Platform guardrail, revision 1: never print a secret") ||
			!strings.Contains(prompt, "ask #platform-oncall before deleting data") {
			t.Errorf("persona %d: the system prompt lacks the guardrail:\n%s", i, prompt)
		}
		for _, dep := range []v1alpha1.Dependency{
			{Kind: v1alpha1.ClusterPromptLayerKind, Name: w.guardrail.Name},
			{Kind: v1alpha1.NamespaceKind, Name: w.ns},
		} {
			if !slices.Contains(r.status.Dependencies, dep) {
				t.Errorf("persona %d: dependencies %v lack %v", i, r.status.Dependencies, dep)
			}
		}
	}
	expectEveryHashChanged(t, "the guardrail's edit", layerEdited, guardrailEdited)
}

// The edit of the parent's extension changes every measured Persona's
// hash, as the Persona parent fan-out needs.
func TestOfflineParentEditChangesEveryHash(t *testing.T) {
	expectEveryHashChanged(t, "the parent's edit", guardrailEdited, parentEdited)
}

// expectEveryHashChanged renders 3 Personas offline at from and at to, and
// fails unless each hash at to is set and differs from its hash at from.
func expectEveryHashChanged(t *testing.T, edit string, from, to revision) {
	t.Helper()
	before, err := renderedHashes("scale-converge-1", 1, 3, from)
	if err != nil {
		t.Fatal(err)
	}
	after, err := renderedHashes("scale-converge-1", 1, 3, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 {
		t.Fatalf("%d hashes, want 3", len(after))
	}
	for name, h := range after {
		if h == "" || h == before[name] {
			t.Errorf("%s: hash %q after %s, %q before", name, h, edit, before[name])
		}
	}
}

// A namespace without the round's label is not selected.
func TestOfflineGuardrailSelectsByNamespaceLabel(t *testing.T) {
	w, err := newWorld("elsewhere", 1, 1, false, created)
	if err != nil {
		t.Fatal(err)
	}
	w.namespace.Labels = roundLabels(2)
	r, err := newOffline(w.namespace, w.guardrail, w.parent, w.layers[0], w.layers[1]).render(w.personas[0])
	if err != nil {
		t.Fatal(err)
	}
	if prompt := r.configMap.Data[render.SystemPromptKey]; strings.Contains(prompt, "Platform guardrail") {
		t.Errorf("the guardrail of round 1 selects a namespace of round 2:\n%s", prompt)
	}
}

// The offline render reads the PromptPlatform as the controller does: its
// completion section replaces the shipped one, its removal drops
// knowledge's, and each of its revisions gives every Persona a hash of its
// own, so each of the three phases changes every ConfigMap.
func TestOfflinePromptPlatform(t *testing.T) {
	hashes := map[string]bool{}
	for _, c := range []struct {
		rev        revision
		completion string
	}{
		{parentEdited, "delivered automatically to your parent agent"},
		{platformCreated, "platform revision 1"},
		{platformEdited, "platform revision 2"},
	} {
		w, err := newWorld("ns", 1, 2, true, c.rev)
		if err != nil {
			t.Fatal(err)
		}
		cm := w.renders[0].configMap
		if prompt := cm.Data[render.SystemPromptKey]; !strings.Contains(prompt, c.completion) {
			t.Errorf("platform revision %d: the system prompt lacks %q:\n%s", c.rev.platform, c.completion, prompt)
		}
		hash := cm.Annotations[delivery.ContentHashAnnotation]
		if hashes[hash] {
			t.Errorf("platform revision %d renders the hash of another revision", c.rev.platform)
		}
		hashes[hash] = true
		origins := w.renders[0].status.Sections
		if i := slices.IndexFunc(origins, func(s v1alpha1.RenderedSection) bool { return s.Name == "platform.completion" }); c.rev.platform > 0 && (i < 0 || origins[i].Origin != "platform/default") {
			t.Errorf("platform revision %d: the completion section's origin is not platform/default: %+v", c.rev.platform, origins)
		}
	}
}
