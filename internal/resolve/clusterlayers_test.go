package resolve_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

func clusterLayer(name string, position v1alpha1.ClusterLayerPosition, nsSel, personaSel map[string]string) *v1alpha1.ClusterPromptLayer {
	l := &v1alpha1.ClusterPromptLayer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ClusterPromptLayerSpec{Position: position, Template: name}}
	if nsSel != nil {
		l.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: nsSel}
	}
	if personaSel != nil {
		l.Spec.PersonaSelector = &metav1.LabelSelector{MatchLabels: personaSel}
	}
	return l
}

// TestClusterLayerSelection derives from clusterpromptlayers.md: a Persona
// is selected when both selectors match, the namespace's labels from its
// Namespace plus kubernetes.io/metadata.name, an unset selector matching all.
func TestClusterLayerSelection(t *testing.T) {
	labelled := persona("p", v1alpha1.PersonaSpec{})
	labelled.Labels = map[string]string{"team": "a"}
	standard := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"guardrails": "standard"}}}
	all := clusterLayer("all", "", nil, nil)
	byNamespace := clusterLayer("by-namespace", v1alpha1.ClusterLayerFirst, map[string]string{"guardrails": "standard"}, nil)
	byName := clusterLayer("by-name", "", map[string]string{corev1.LabelMetadataName: "ns"}, nil)
	byPersona := clusterLayer("by-persona", "", nil, map[string]string{"team": "a"})
	both := clusterLayer("both", "", map[string]string{"guardrails": "standard"}, map[string]string{"team": "b"})
	elsewhere := clusterLayer("elsewhere", "", map[string]string{corev1.LabelMetadataName: "other"}, nil)

	for _, tc := range []struct {
		name string
		objs []client.Object
		want []render.ClusterLayer
		deps []v1alpha1.Dependency
	}{
		{"none exists: no guardrail, no dependency", nil, nil, nil},
		{
			"no Namespace object: only its name label",
			[]client.Object{all, byNamespace, byName, elsewhere},
			[]render.ClusterLayer{{Name: "all", Position: "last", Template: "all"}, {Name: "by-name", Position: "last", Template: "by-name"}},
			[]v1alpha1.Dependency{{Kind: "ClusterPromptLayer", Name: "all"}, {Kind: "ClusterPromptLayer", Name: "by-name"}, {Kind: "Namespace", Name: "ns"}},
		},
		{
			"namespace and persona labels, both selectors needed",
			[]client.Object{standard, byPersona, byNamespace, both},
			[]render.ClusterLayer{{Name: "by-namespace", Position: "first", Template: "by-namespace"}, {Name: "by-persona", Position: "last", Template: "by-persona"}},
			[]v1alpha1.Dependency{{Kind: "ClusterPromptLayer", Name: "by-namespace"}, {Kind: "ClusterPromptLayer", Name: "by-persona"}, {Kind: "Namespace", Name: "ns"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := resolve.Resolve(context.Background(), set(append(tc.objs, labelled)...), labelled)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Bundle.ClusterLayers, tc.want) {
				t.Errorf("cluster layers %+v, want %+v", res.Bundle.ClusterLayers, tc.want)
			}
			if !slices.Equal(res.Dependencies, tc.deps) {
				t.Errorf("dependencies %+v, want %+v", res.Dependencies, tc.deps)
			}
		})
	}
}

// TestPersonaListingAClusterPromptLayer: a ClusterPromptLayer is not a
// PromptLayer, so listing its name under layers is a missing reference.
func TestPersonaListingAClusterPromptLayer(t *testing.T) {
	p := persona("p", v1alpha1.PersonaSpec{Layers: []v1alpha1.LayerReference{{Name: "all"}}})
	_, err := resolve.Resolve(context.Background(), set(p, clusterLayer("all", "", nil, nil)), p)
	var notFound *resolve.NotFoundError
	if !errors.As(err, &notFound) || notFound.Missing[0].Kind != "PromptLayer" || notFound.Missing[0].Name != "all" {
		t.Fatalf("error %v, want PromptLayer \"all\" not found", err)
	}
}

// The identity of a set of guardrails changes with a UID, a position or a
// template, and with nothing else: not the name, not the order.
func TestGuardrailsIdentity(t *testing.T) {
	g := func(uid, name, position, template string) resolve.Guardrail {
		return resolve.Guardrail{UID: types.UID(uid), Layer: render.ClusterLayer{Name: name, Position: position, Template: template}}
	}
	base := []resolve.Guardrail{g("u1", "a", "last", "A"), g("u2", "b", "first", "B")}
	id := resolve.GuardrailsIdentity(base)
	if !strings.HasPrefix(id, "sha256:") || len(id) != len("sha256:")+64 {
		t.Fatalf("identity %q is not sha256:<hex>", id)
	}
	if got := resolve.GuardrailsIdentity(nil); got != "" {
		t.Errorf("no guardrails: %q, want empty", got)
	}
	same := [][]resolve.Guardrail{
		{base[1], base[0]},
		{g("u1", "renamed", "last", "A"), base[1]},
	}
	for _, s := range same {
		if resolve.GuardrailsIdentity(s) != id {
			t.Errorf("%v: identity changed", s)
		}
	}
	changed := [][]resolve.Guardrail{
		{g("u3", "a", "last", "A"), base[1]},  // re-created
		{g("u1", "a", "final", "A"), base[1]}, // moved
		{g("u1", "a", "last", "A2"), base[1]}, // rewritten
		{base[0]},                             // one deleted
		{base[0], base[1], g("u4", "c", "last", "C")},
	}
	for _, c := range changed {
		if resolve.GuardrailsIdentity(c) == id {
			t.Errorf("%v: identity unchanged", c)
		}
	}
}
