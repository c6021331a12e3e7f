package resolve

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// Result is a resolved persona.
type Result struct {
	// Bundle is the render input; nil when resolution failed.
	Bundle *render.Bundle
	// Guardrails are the ClusterPromptLayers in Bundle.ClusterLayers, with
	// their UIDs.
	Guardrails []Guardrail
	// Dependencies are every object resolution read or tried to read, the
	// persona itself excluded, sorted. They are set even when resolution
	// fails, so that the object whose absence failed it triggers a retry.
	Dependencies []v1alpha1.Dependency
}

// resolver is one resolution in progress.
type resolver struct {
	ctx     context.Context
	lookup  Lookup
	engine  *render.Engine
	ns      string
	deps    map[v1alpha1.Dependency]bool
	missing []Reference
}

// Resolve resolves p: its inheritance chain (personas.md#inheritance), layers (personas.md#layers),
// included layers (personas.md#functions), templateFrom ConfigMaps, the
// PromptPlatform (promptplatforms.md) and the selected ClusterPromptLayers
// (clusterpromptlayers.md). The error is a *CycleError, a *TooDeepError, a
// *NotFoundError, a *HarnessPromptForbiddenError or a lookup failure.
func Resolve(ctx context.Context, lookup Lookup, p *v1alpha1.Persona) (*Result, error) {
	r := &resolver{ctx: ctx, lookup: lookup, engine: render.Default(), ns: p.Namespace, deps: map[v1alpha1.Dependency]bool{}}
	b, guardrails, err := r.bundle(p)
	res := &Result{Dependencies: r.dependencies(p.Name)}
	if err != nil {
		return res, err
	}
	res.Bundle, res.Guardrails = b, guardrails
	return res, nil
}

func (r *resolver) bundle(p *v1alpha1.Persona) (*render.Bundle, []Guardrail, error) {
	chain, err := r.chain(p)
	if err != nil {
		return nil, nil, err
	}
	platform, replaceAllowed, err := r.platform()
	if err != nil {
		return nil, nil, err
	}
	b := merge(p, chain, platform)
	layers, err := r.layers(chain)
	if err != nil {
		return nil, nil, err
	}
	b.Layers = layers
	if err := r.includes(b); err != nil {
		return nil, nil, err
	}
	guardrails, err := r.guardrails(p)
	if err != nil {
		return nil, nil, err
	}
	b.ClusterLayers = Layers(guardrails)
	if len(r.missing) > 0 {
		return nil, nil, &NotFoundError{Missing: r.missing}
	}
	// Judged on the whole chain only: a parent still missing may set it.
	if !replaceAllowed {
		if err := forbiddenReplace(p, chain); err != nil {
			return nil, nil, err
		}
	}
	return b, guardrails, nil
}

func (r *resolver) dependencies(self string) []v1alpha1.Dependency {
	out := make([]v1alpha1.Dependency, 0, len(r.deps))
	for d := range r.deps {
		if d.Kind == v1alpha1.PersonaKind && d.Name == self {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b v1alpha1.Dependency) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// get reads an object of the persona's namespace, recording the dependency
// and, when it does not exist, the missing reference. found is false for a
// missing object; err is any other failure.
func (r *resolver) get(kind, name string, obj client.Object, by Referrer) (found bool, err error) {
	r.deps[v1alpha1.Dependency{Kind: kind, Name: name}] = true
	err = r.lookup.Get(r.ctx, client.ObjectKey{Namespace: r.ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		r.missing = append(r.missing, Reference{Kind: kind, Name: name, By: by})
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %s %s/%s: %w", kind, r.ns, name, err)
	}
	return true, nil
}

// MaxChain is the most Personas an inheritance chain holds, the Persona
// itself included (personas.md#inheritance).
const MaxChain = 64

// chain is the post-order depth-first walk of inherit, in list order, each
// persona once, p last. A missing parent is recorded and skipped, so every
// missing parent is reported at once. The walk stops at the first persona
// past MaxChain, so it costs time linear in the chain, whatever its length.
func (r *resolver) chain(p *v1alpha1.Persona) ([]*v1alpha1.Persona, error) {
	var out []*v1alpha1.Persona
	done := map[string]bool{}
	var stack []string
	entered := 0
	var visit func(p *v1alpha1.Persona) error
	visit = func(p *v1alpha1.Persona) error {
		if entered++; entered > MaxChain {
			return &TooDeepError{Persona: p.Name}
		}
		stack = append(stack, p.Name)
		for _, parentName := range p.Spec.Inherit {
			name := string(parentName)
			// The stack holds at most MaxChain names: a look-up is cheap.
			if i := slices.Index(stack, name); i >= 0 {
				return &CycleError{Chain: append(slices.Clone(stack[i:]), name)}
			}
			if done[name] {
				continue
			}
			var parent v1alpha1.Persona
			found, err := r.get(v1alpha1.PersonaKind, name, &parent, Referrer{ByPersona, p.Name})
			if err != nil {
				return err
			}
			if !found {
				done[name] = true
				continue
			}
			if err := visit(&parent); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		done[p.Name] = true
		out = append(out, p)
		return nil
	}
	if err := visit(p); err != nil {
		return nil, err
	}
	return out, nil
}

// layers resolves the chain's layers: in chain order, the first occurrence
// of each name kept, then sorted by source rank.
func (r *resolver) layers(chain []*v1alpha1.Persona) ([]render.Layer, error) {
	var out []render.Layer
	seen := map[string]bool{}
	for _, p := range chain {
		for _, ref := range p.Spec.Layers {
			if seen[ref.Name] {
				continue
			}
			seen[ref.Name] = true
			l, found, err := r.layer(ref.Name, Referrer{ByPersona, p.Name})
			if err != nil {
				return nil, err
			}
			if found {
				out = append(out, l)
			}
		}
	}
	render.SortLayers(out)
	return out, nil
}

// layer reads a PromptLayer and its template text.
func (r *resolver) layer(name string, by Referrer) (render.Layer, bool, error) {
	var pl v1alpha1.PromptLayer
	found, err := r.get(v1alpha1.PromptLayerKind, name, &pl, by)
	if err != nil || !found {
		return render.Layer{}, false, err
	}
	l := render.Layer{
		Name:   name,
		Source: cmp.Or(pl.Spec.Source, render.SourcePackage),
		Mode:   cmp.Or(string(pl.Spec.Mode), render.ModeAppend),
	}
	switch {
	case pl.Spec.Template != nil:
		l.Template = *pl.Spec.Template
	case pl.Spec.TemplateFrom != nil:
		r.deps[v1alpha1.Dependency{Kind: v1alpha1.ConfigMapKind, Name: pl.Spec.TemplateFrom.ConfigMapKeyRef.Name}] = true
		text, missing, err := TemplateFrom(r.ctx, r.lookup, r.ns, &pl)
		if err != nil {
			return render.Layer{}, false, err
		}
		if missing != nil {
			r.missing = append(r.missing, *missing)
			return render.Layer{}, false, nil
		}
		l.Template = text
	}
	return l, true, nil
}

// includes resolves every layer that the bundle's templates include,
// directly or through other included layers.
func (r *resolver) includes(b *render.Bundle) error {
	type pending struct {
		kind      render.SectionKind
		name, src string
		by        Referrer
	}
	queue := make([]pending, 0, len(b.Sections)+len(b.Extensions)+len(b.Layers))
	for _, s := range b.Sections {
		queue = append(queue, pending{render.KindPlatform, s.Key, s.Template, Referrer{ByPlatform, s.Key}})
	}
	for _, e := range b.Extensions {
		queue = append(queue, pending{render.KindExtension, e.ID, e.Template, Referrer{ByExtension, e.ID}})
	}
	for _, l := range b.Layers {
		if l.Mode != render.ModeDisable {
			queue = append(queue, pending{render.KindLayer, l.Name, l.Template, Referrer{ByLayer, l.Name}})
		}
	}
	tried := map[string]bool{}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, name := range r.engine.Includes(next.kind, next.name, next.src) {
			if tried[name] {
				continue
			}
			tried[name] = true
			l, found, err := r.layer(name, next.by)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if b.Includes == nil {
				b.Includes = map[string]string{}
			}
			b.Includes[name] = l.Template
			queue = append(queue, pending{render.KindLayer, name, l.Template, Referrer{ByLayer, name}})
		}
	}
	return nil
}
