package cli

import (
	"context"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/render"
)

// checked is a manifest set checked as validate checks it, with the render
// of every Persona that has no problem.
type checked struct {
	problems problems
	// warnings are admission's warnings (admission.Warnings): legal, but
	// most likely a slip.
	warnings problems
	rendered map[promptdiff.Ref]*render.Output
	counts   Counts
}

// checkSet runs every check of validate on set: the problems found while
// reading, admission, then resolving and rendering each Persona and
// checking each PromptLayer's templateFrom.
func checkSet(ctx context.Context, set *manifest.Set) *checked {
	c := &checked{problems: problems(set.Problems), rendered: map[promptdiff.Ref]*render.Output{}}
	c.counts.Documents = set.Documents
	admitted := admit(set, &c.problems)
	for _, obj := range set.Objects() {
		switch {
		case obj.FromCluster():
			// an input of the render, not one of the manifests checked
		case obj.Kind == v1alpha1.PersonaKind:
			c.counts.Personas++
		case obj.Kind == v1alpha1.PromptLayerKind:
			c.counts.PromptLayers++
		case obj.Kind == v1alpha1.ClusterPromptLayerKind:
			c.counts.ClusterPromptLayers++
		case obj.Kind == v1alpha1.PromptPlatformKind:
			c.counts.PromptPlatforms++
		case obj.Kind == v1alpha1.ConfigMapKind:
			c.counts.ConfigMaps++
		case obj.Kind == v1alpha1.NamespaceKind:
			c.counts.Namespaces++
		}
		// A duplicate is reported as such; the first definition is checked.
		if !admitted[obj] || !set.Indexed(obj) {
			continue
		}
		if !obj.FromCluster() { // a warning is for the manifests' author
			for _, w := range admission.Warnings(obj.Raw) {
				c.warnings.add(obj, w.Field, w.Message)
			}
		}
		switch obj.Kind {
		case v1alpha1.PersonaKind:
			if out := checkPersona(ctx, set, obj, &c.problems); out != nil {
				c.rendered[promptdiff.Ref{Namespace: obj.Namespace, Name: obj.Name}] = out
			}
		case v1alpha1.PromptLayerKind:
			checkLayer(set, obj, &c.problems)
		}
	}
	c.counts.Problems = len(c.problems)
	return c
}

// data is the ConfigMap data of every rendered persona.
func (c *checked) data() map[promptdiff.Ref]map[string]string {
	out := make(map[promptdiff.Ref]map[string]string, len(c.rendered))
	for r, o := range c.rendered {
		out[r] = o.Data
	}
	return out
}
