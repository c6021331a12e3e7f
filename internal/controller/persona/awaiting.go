package persona

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

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
