package controller

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/status"
)

// deferredStatuses holds, for each Persona whose ConfigMap a fan-out wrote
// and whose status waits for its pass of low priority, what that status is
// to say and the inputs of the render. The pass resolves again; when it
// reads the same inputs and the ConfigMap still holds the render, it
// reports the render without rendering it a second time. Entries live
// from the delivery until the Persona's next reconcile, so they hold no
// rendered text.
type deferredStatuses struct {
	mu        sync.Mutex
	byPersona map[types.NamespacedName]deferredStatus
}

type deferredStatus struct {
	inputs   inputs
	render   status.Render
	revision v1alpha1.RevisionHistoryEntry
}

func newDeferredStatuses() *deferredStatuses {
	return &deferredStatuses{byPersona: map[types.NamespacedName]deferredStatus{}}
}

// put records the render delivered for persona, read from in, whose status
// is deferred; its section names are shared with the statuses that have them.
func (d *deferredStatuses) put(persona types.NamespacedName, in inputs, r status.Render, rev v1alpha1.RevisionHistoryEntry) {
	r.Sections = slices.Clone(r.Sections)
	for i := range r.Sections {
		r.Sections[i].Name, r.Sections[i].Origin = intern(r.Sections[i].Name), intern(r.Sections[i].Origin)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byPersona[persona] = deferredStatus{inputs: in, render: r, revision: rev}
}

// take returns and forgets what was recorded for persona.
func (d *deferredStatuses) take(persona types.NamespacedName) (deferredStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.byPersona[persona]
	delete(d.byPersona, persona)
	return s, ok
}

// forgetPersona drops what was recorded for persona.
func (d *deferredStatuses) forgetPersona(persona types.NamespacedName) { d.take(persona) }
