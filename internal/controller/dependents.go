package controller

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// objectRef names an object a Persona's render reads.
type objectRef struct {
	Kind, Namespace, Name string
}

// dependents lists the Personas a change of ref re-renders (personas.md#conditions, order
// never matters). Three sources, so that none depends on which informer
// event reaches its cache first:
//   - what the Personas' specs name, hop by hop: a Persona that lists a
//     layer, and every Persona that inherits from it; a layer that includes
//     or reads ref through templateFrom, and everything that names that layer;
//   - what their last render read (status.dependencies), transitively;
//   - the Personas whose last render found ref missing (awaiting).
func dependents(ctx context.Context, c client.Reader, waiting *awaiting, ref objectRef) []reconcile.Request {
	personas := sets.New(waiting.waiters(ref)...)
	seen := sets.New[string]()
	queue := []string{dependencyKey(ref.Kind, ref.Name)}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if seen.Has(key) {
			continue
		}
		seen.Insert(key)
		for _, index := range []string{referenceIndex, dependencyIndex} {
			for _, name := range listNames(ctx, c, &v1alpha1.PersonaList{}, ref.Namespace, index, key) {
				personas.Insert(name)
				queue = append(queue, dependencyKey(v1alpha1.PersonaKind, name))
			}
		}
		for _, name := range listNames(ctx, c, &v1alpha1.PromptLayerList{}, ref.Namespace, referenceIndex, key) {
			queue = append(queue, dependencyKey(v1alpha1.PromptLayerKind, name))
		}
	}
	reqs := make([]reconcile.Request, 0, personas.Len())
	for _, name := range sets.List(personas) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: name}})
	}
	return reqs
}

// awaiting records the objects each Persona's last render found missing.
// A reconcile records them before it reads them once more, so an object
// that arrives is either seen by that read or finds the Persona here when
// its event is handled; the status index alone would miss a Persona whose
// status has not reached the cache yet.
type awaiting struct {
	mu        sync.Mutex
	byRef     map[objectRef]sets.Set[string]
	byPersona map[types.NamespacedName][]objectRef
}

func newAwaiting() *awaiting {
	return &awaiting{byRef: map[objectRef]sets.Set[string]{}, byPersona: map[types.NamespacedName][]objectRef{}}
}

// set records that persona waits for refs, in place of what it waited for
// before; none forgets it.
func (a *awaiting) set(persona types.NamespacedName, refs []objectRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.Equal(a.byPersona[persona], refs) {
		return
	}
	for _, ref := range a.byPersona[persona] {
		if names := a.byRef[ref]; names != nil {
			names.Delete(persona.Name)
			if names.Len() == 0 {
				delete(a.byRef, ref)
			}
		}
	}
	if len(refs) == 0 {
		delete(a.byPersona, persona)
		return
	}
	a.byPersona[persona] = refs
	for _, ref := range refs {
		if a.byRef[ref] == nil {
			a.byRef[ref] = sets.New[string]()
		}
		a.byRef[ref].Insert(persona.Name)
	}
}

// waiters are the names of the Personas, in ref's namespace, waiting for ref.
func (a *awaiting) waiters(ref objectRef) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sets.List(a.byRef[ref])
}

// forgetPersona forgets what persona waited for.
func (a *awaiting) forgetPersona(persona types.NamespacedName) { a.set(persona, nil) }
