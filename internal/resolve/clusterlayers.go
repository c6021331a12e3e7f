package resolve

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// Guardrail is a ClusterPromptLayer selected for a Persona: the layer its
// render places, and the object's UID, which tells a re-created
// ClusterPromptLayer from the one it replaces.
type Guardrail struct {
	UID   types.UID
	Layer render.ClusterLayer
}

// Guardrails are the ClusterPromptLayers that select p, in name order,
// whatever else of p resolves.
func Guardrails(ctx context.Context, lookup Lookup, p *v1alpha1.Persona) ([]Guardrail, error) {
	r := &resolver{ctx: ctx, lookup: lookup, ns: p.Namespace, deps: map[v1alpha1.Dependency]bool{}}
	return r.guardrails(p)
}

// Layers are the ClusterLayers of gs, in their order.
func Layers(gs []Guardrail) []render.ClusterLayer {
	if len(gs) == 0 {
		return nil
	}
	out := make([]render.ClusterLayer, len(gs))
	for i, g := range gs {
		out[i] = g.Layer
	}
	return out
}

// GuardrailsIdentity is sha256:<hex> of the set of gs, each by its UID,
// position and the hash of its template, or "" when gs is empty. Two
// renders with the same identity have the same guardrails; a generation
// would not tell, since it starts again on re-creation and a description
// edit changes it.
func GuardrailsIdentity(gs []Guardrail) string {
	if len(gs) == 0 {
		return ""
	}
	lines := make([]string, len(gs))
	for i, g := range gs {
		template := sha256.Sum256([]byte(g.Layer.Template))
		lines[i] = string(g.UID) + " " + g.Layer.Position + " " + hex.EncodeToString(template[:]) + "\n"
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// guardrails are the ClusterPromptLayers that select p, in name order.
// The Namespace's labels are read once any exists; they and each selected
// layer are dependencies.
func (r *resolver) guardrails(p *v1alpha1.Persona) ([]Guardrail, error) {
	var list v1alpha1.ClusterPromptLayerList
	if err := r.lookup.List(r.ctx, &list); err != nil {
		return nil, fmt.Errorf("list %s: %w", v1alpha1.ClusterPromptLayerKind, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	r.deps[v1alpha1.Dependency{Kind: v1alpha1.NamespaceKind, Name: r.ns}] = true
	nsLabels, err := NamespaceLabels(r.ctx, r.lookup, r.ns)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b v1alpha1.ClusterPromptLayer) int { return cmp.Compare(a.Name, b.Name) })
	var out []Guardrail
	for i := range list.Items {
		l := &list.Items[i]
		if !Selects(l, nsLabels, p.Labels) {
			continue
		}
		r.deps[v1alpha1.Dependency{Kind: v1alpha1.ClusterPromptLayerKind, Name: l.Name}] = true
		out = append(out, Guardrail{UID: l.UID, Layer: render.ClusterLayer{
			Name:     l.Name,
			Position: string(cmp.Or(l.Spec.Position, v1alpha1.ClusterLayerLast)),
			Template: l.Spec.Template,
		}})
	}
	return out, nil
}

// NamespaceLabels are the labels of namespace: its Namespace object's, with
// kubernetes.io/metadata.name, which the API server sets on every
// Namespace, also when no Namespace object is at hand (offline).
func NamespaceLabels(ctx context.Context, lookup Lookup, namespace string) (labels.Set, error) {
	var ns corev1.Namespace
	err := lookup.Get(ctx, client.ObjectKey{Name: namespace}, &ns)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get %s %s: %w", v1alpha1.NamespaceKind, namespace, err)
	}
	return SelectorLabels(namespace, ns.Labels), nil
}

// SelectorLabels are the labels of the Namespace name as selectors see
// them: its own, and kubernetes.io/metadata.name.
func SelectorLabels(name string, nsLabels map[string]string) labels.Set {
	out := labels.Set(maps.Clone(nsLabels))
	if out == nil {
		out = labels.Set{}
	}
	out[corev1.LabelMetadataName] = name
	return out
}

// Selects reports whether l selects a Persona labelled personaLabels in a
// namespace labelled nsLabels: both selectors match, an empty or unset one
// matching everything. A selector that does not parse selects nothing; the
// ClusterPromptLayer reports it.
func Selects(l *v1alpha1.ClusterPromptLayer, nsLabels, personaLabels labels.Set) bool {
	return matches(l.Spec.NamespaceSelector, nsLabels) && matches(l.Spec.PersonaSelector, personaLabels)
}

func matches(selector *metav1.LabelSelector, set labels.Set) bool {
	if selector == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && s.Matches(set)
}
