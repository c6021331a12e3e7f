package resolve

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// platform is the PromptPlatform default's sections, as overrides of the
// shipped ones, or nil when there is none: a missing PromptPlatform is no
// missing reference, the shipped sections stand (promptplatforms.md). One
// that exists is a dependency. replaceAllowed is whether it allows
// harnessPrompt: replace, as a missing one does.
func (r *resolver) platform() (overrides map[string]render.Override, replaceAllowed bool, err error) {
	var pp v1alpha1.PromptPlatform
	err = r.lookup.Get(r.ctx, client.ObjectKey{Name: v1alpha1.PromptPlatformName}, &pp)
	if apierrors.IsNotFound(err) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get %s %s: %w", v1alpha1.PromptPlatformKind, v1alpha1.PromptPlatformName, err)
	}
	r.deps[v1alpha1.Dependency{Kind: v1alpha1.PromptPlatformKind, Name: pp.Name}] = true
	return PlatformOverrides(&pp.Spec), pp.Spec.ReplaceAllowed(), nil
}

// forbiddenReplace is the error of a persona (its chain) or a variant of p
// that asks for harnessPrompt: replace, for a platform that forbids it;
// nil when none does.
func forbiddenReplace(p *v1alpha1.Persona, chain []*v1alpha1.Persona) error {
	var uses []HarnessPromptUse
	for i := len(chain) - 1; i >= 0; i-- {
		if hp := chain[i].Spec.HarnessPrompt; hp != nil {
			if *hp == v1alpha1.HarnessPromptReplace {
				use := HarnessPromptUse{Field: "spec.harnessPrompt"}
				if chain[i].Name != p.Name {
					use.From = chain[i].Name
				}
				uses = append(uses, use)
			}
			break // the last persona of the chain that sets it wins
		}
	}
	for i, v := range p.Spec.Variants {
		if v.HarnessPrompt == v1alpha1.HarnessPromptReplace {
			uses = append(uses, HarnessPromptUse{Field: fmt.Sprintf("spec.variants[%d].harnessPrompt", i)})
		}
	}
	if len(uses) == 0 {
		return nil
	}
	return &HarnessPromptForbiddenError{Uses: uses}
}

// PlatformOverrides are a PromptPlatform's sections as overrides of the
// shipped ones, of origin platform/default.
func PlatformOverrides(spec *v1alpha1.PromptPlatformSpec) map[string]render.Override {
	return overridesOf(spec.Sections, render.OriginPlatform, nil)
}

// overridesOf adds the entries of sections to into (a new map when nil),
// each of the origin, a later entry of a key replacing an earlier one.
func overridesOf(sections map[string]v1alpha1.PlatformOverride, origin string, into map[string]render.Override) map[string]render.Override {
	for key, o := range sections {
		switch {
		case o.Replace != nil:
			if into == nil {
				into = map[string]render.Override{}
			}
			into[key] = render.Override{Origin: origin, Template: o.Replace}
		case o.Remove != nil && *o.Remove:
			if into == nil {
				into = map[string]render.Override{}
			}
			into[key] = render.Override{Origin: origin}
		}
	}
	return into
}
