package persona

import (
	"context"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// The PromptPlatform is read by every Persona, so a change to it is the
// largest fan-out of the API. It re-renders only the Personas that render a
// changed section from the platform: a Persona whose inheritance chain
// replaces or removes every changed key renders the same whatever the
// platform says of them (promptplatforms.md#propagation). A change of
// whether harnessPrompt: replace is allowed re-renders only the Personas
// whose chain or variants set replace somewhere.

// watchPlatform enqueues, when the PromptPlatform is created, changed or
// deleted, the Personas that render a section whose platform override
// changed, and tells the platform how many (one Propagated Event per
// creation or change).
func (r *reconciler) watchPlatform(mgr ctrl.Manager) source.Source {
	enqueue := func(ctx context.Context, q queue, before, after *v1alpha1.PromptPlatform) int {
		reqs := r.platformDependents(ctx, changedSections(before, after), replaceRuleChanged(before, after))
		for _, req := range reqs {
			q.Add(req)
		}
		return len(reqs)
	}
	return source.Kind(mgr.GetCache(), &v1alpha1.PromptPlatform{}, propagating(r, enqueue))
}

// changedSections are the keys whose platform override differs between
// before and after (nil: no PromptPlatform).
func changedSections(before, after *v1alpha1.PromptPlatform) sets.Set[string] {
	overrides := func(pp *v1alpha1.PromptPlatform) map[string]render.Override {
		if pp == nil {
			return nil
		}
		return resolve.PlatformOverrides(&pp.Spec)
	}
	old, cur := overrides(before), overrides(after)
	changed := sets.New[string]()
	for _, key := range render.Catalog {
		o, inOld := old[key]
		c, inCur := cur[key]
		if inOld != inCur || (o.Template == nil) != (c.Template == nil) || (o.Template != nil && *o.Template != *c.Template) {
			changed.Insert(key)
		}
	}
	return changed
}

// replaceRuleChanged reports whether before and after (nil: no
// PromptPlatform) differ in allowing harnessPrompt: replace.
func replaceRuleChanged(before, after *v1alpha1.PromptPlatform) bool {
	allowed := func(pp *v1alpha1.PromptPlatform) bool { return pp == nil || pp.Spec.ReplaceAllowed() }
	return allowed(before) != allowed(after)
}

// platformDependents are the Personas, in every watched namespace, that
// render at least one of the keys from the platform: those whose chain does
// not override every one of them; and, when replaceRule changed, those
// whose chain or variants set harnessPrompt: replace.
func (r *reconciler) platformDependents(ctx context.Context, keys sets.Set[string], replaceRule bool) []reconcile.Request {
	if keys.Len() == 0 && !replaceRule {
		return nil
	}
	var personas v1alpha1.PersonaList
	if err := r.List(ctx, &personas, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Personas for the PromptPlatform")
		return nil
	}
	byKey := make(map[types.NamespacedName]*v1alpha1.Persona, len(personas.Items))
	for i := range personas.Items {
		p := &personas.Items[i]
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	chains := chainOverrides{personas: byKey, memo: map[types.NamespacedName]sets.Set[string]{}}
	replacing := chainReplaces{personas: byKey, memo: map[types.NamespacedName]bool{}}
	var reqs []reconcile.Request
	for key, p := range byKey {
		if (keys.Len() > 0 && !chains.of(p).IsSuperset(keys)) || (replaceRule && replacing.of(p)) {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// chainReplaces finds whether a Persona's chain or variants set
// harnessPrompt: replace anywhere (even where a later persona sets keep: a
// few renders more, which write nothing, for a simple rule), each Persona's
// once.
type chainReplaces struct {
	personas map[types.NamespacedName]*v1alpha1.Persona
	memo     map[types.NamespacedName]bool
}

func (c chainReplaces) of(p *v1alpha1.Persona) bool {
	for _, v := range p.Spec.Variants {
		if v.HarnessPrompt == v1alpha1.HarnessPromptReplace {
			return true
		}
	}
	return c.chain(p)
}

// chain reports whether p or a Persona it inherits, listed, sets replace.
// A cycle's second visit finds false, being filled.
func (c chainReplaces) chain(p *v1alpha1.Persona) bool {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	if replaces, ok := c.memo[key]; ok {
		return replaces
	}
	c.memo[key] = false
	replaces := p.Spec.HarnessPrompt != nil && *p.Spec.HarnessPrompt == v1alpha1.HarnessPromptReplace
	for _, parent := range p.Spec.Inherit {
		if replaces {
			break
		}
		if pp, ok := c.personas[types.NamespacedName{Namespace: p.Namespace, Name: string(parent)}]; ok {
			replaces = c.chain(pp)
		}
	}
	c.memo[key] = replaces
	return replaces
}

// chainOverrides finds the platform keys a Persona's inheritance chain
// replaces or removes, from the Personas listed, each Persona's once.
type chainOverrides struct {
	personas map[types.NamespacedName]*v1alpha1.Persona
	memo     map[types.NamespacedName]sets.Set[string]
}

// of is the keys p's chain overrides. A parent that is not listed
// overrides nothing, and a cycle's second visit neither: such a Persona is
// re-rendered, and its render reports the problem.
func (c chainOverrides) of(p *v1alpha1.Persona) sets.Set[string] {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	if keys, ok := c.memo[key]; ok {
		return keys
	}
	keys := sets.New[string]()
	c.memo[key] = keys // a cycle finds this one, still being filled
	if sp := p.Spec.SystemPrompt; sp != nil {
		keys.Insert(slices.Collect(maps.Keys(sp.Platform))...)
	}
	for _, parent := range p.Spec.Inherit {
		if pp, ok := c.personas[types.NamespacedName{Namespace: p.Namespace, Name: string(parent)}]; ok {
			keys = keys.Union(c.of(pp))
		}
	}
	c.memo[key] = keys
	return keys
}
