package kube

import (
	"slices"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// TestDependencyIndexHoldsNamespacedKinds: the namespace's objects a
// change is looked up by are indexed; what every Persona of a namespace or
// of the cluster reads is not.
func TestDependencyIndexHoldsNamespacedKinds(t *testing.T) {
	p := &v1alpha1.Persona{Status: v1alpha1.PersonaStatus{Dependencies: []v1alpha1.Dependency{
		{Kind: v1alpha1.ClusterPromptLayerKind, Name: "guardrails"},
		{Kind: v1alpha1.ConfigMapKind, Name: "tone"},
		{Kind: v1alpha1.NamespaceKind, Name: "team"},
		{Kind: v1alpha1.PersonaKind, Name: "base"},
		{Kind: v1alpha1.PromptLayerKind, Name: "style"},
		{Kind: v1alpha1.PromptPlatformKind, Name: "platform"},
	}}}
	want := []string{"ConfigMap/tone", "Persona/base", "PromptLayer/style"}
	if got := IndexDependencies(p); !slices.Equal(got, want) {
		t.Errorf("IndexDependencies = %q, want %q", got, want)
	}
}
