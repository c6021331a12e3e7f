package persona

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// deferredStatuses holds, for each Persona whose ConfigMap a fan-out wrote
// and whose status waits for its pass of low priority, what that status is
// to say and the inputs of the render. The pass resolves again; when it
// reads the same inputs and the ConfigMap still holds the render, it
// reports the render without delivering it a second time. Entries live
// from the delivery until the Persona's next reconcile. They hold no
// rendered data: the pass renders the same inputs again for the revision's
// snapshot, which costs less than holding a fan-out's data (14 KiB a
// Persona) until its status passes, or reading it back.
type deferredStatuses struct {
	mu        sync.Mutex
	byPersona map[types.NamespacedName]deferredStatus
}

type deferredStatus struct {
	inputs   inputs
	render   status.Render
	revision v1alpha1.RevisionHistoryEntry
	// record is the revision.json the delivery wrote ("" when larger than
	// maxKeptRecordBytes: the pass reads the ConfigMap back then).
	record     string
	guardrails string
}

func newDeferredStatuses() *deferredStatuses {
	return &deferredStatuses{byPersona: map[types.NamespacedName]deferredStatus{}}
}

// put records the render delivered for persona, read from in, whose status
// is deferred, with the revision.json written and the identity of the
// guardrails it was rendered with; its section names are shared with the
// statuses that have them.
func (d *deferredStatuses) put(persona types.NamespacedName, in inputs, r status.Render, rev v1alpha1.RevisionHistoryEntry, written map[string]string, guardrails string) {
	r.Sections = slices.Clone(r.Sections)
	for i := range r.Sections {
		r.Sections[i].Name, r.Sections[i].Origin = kube.Intern(r.Sections[i].Name), kube.Intern(r.Sections[i].Origin)
	}
	s := deferredStatus{inputs: in, render: r, revision: rev, guardrails: guardrails}
	if record := written[render.RevisionKey]; len(record) <= maxKeptRecordBytes {
		s.record = record
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byPersona[persona] = s
}

// has reports whether a status pass waits for persona.
func (d *deferredStatuses) has(persona types.NamespacedName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.byPersona[persona]
	return ok
}

// take returns and forgets what was recorded for persona.
func (d *deferredStatuses) take(persona types.NamespacedName) (deferredStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropLocked(persona)
}

func (d *deferredStatuses) dropLocked(persona types.NamespacedName) (deferredStatus, bool) {
	s, ok := d.byPersona[persona]
	delete(d.byPersona, persona)
	return s, ok
}

// forgetPersona drops what was recorded for persona.
func (d *deferredStatuses) forgetPersona(persona types.NamespacedName) { d.take(persona) }
