package persona

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/status"
)

// deferredStatuses holds, for each Persona whose ConfigMap a fan-out wrote
// and whose status waits for its pass of low priority, what that status is
// to say and the inputs of the render. The pass resolves again; when it
// reads the same inputs and the ConfigMap still holds the render, it
// reports the render without rendering it a second time. Entries live
// from the delivery until the Persona's next reconcile. They also hold the
// data written, packed (packed_data.go), for the pass to write the
// revision's snapshot without reading the ConfigMap back, while all of them
// together hold at most deferredDataBytes; past that, the pass reads it.
type deferredStatuses struct {
	mu        sync.Mutex
	byPersona map[types.NamespacedName]deferredStatus
	dataBytes int
}

// deferredDataBytes bounds the packed data the deferred statuses of a
// fan-out hold at once: a fan-out of 50,000 Personas holds the first 16 MiB
// of what it wrote, packed (about 3,900 of the scale harness's Personas,
// 14 KB of data each, 4.3 KB packed), and its status passes read the rest
// back.
const deferredDataBytes = 16 << 20

type deferredStatus struct {
	inputs   inputs
	render   status.Render
	revision v1alpha1.RevisionHistoryEntry
	// written is the data the delivery wrote, packed (nil past
	// deferredDataBytes), rendered with guardrails.
	written    packedData
	guardrails string
}

// data is the data the delivery wrote, nil when it is not held.
func (s deferredStatus) data(ctx context.Context) map[string]string {
	if s.written == nil {
		return nil
	}
	data, err := s.written.unpack()
	if err != nil {
		// The snapshot is written from the ConfigMap read back instead.
		ctrl.LoggerFrom(ctx).Error(err, "unpack the data held for the snapshot")
		return nil
	}
	return data
}

func newDeferredStatuses() *deferredStatuses {
	return &deferredStatuses{byPersona: map[types.NamespacedName]deferredStatus{}}
}

// put records the render delivered for persona, read from in, whose status
// is deferred, and the data written with the guardrails it was rendered
// with; its sections are shared with the statuses that have them.
func (d *deferredStatuses) put(ctx context.Context, persona types.NamespacedName, in inputs, r status.Render, rev v1alpha1.RevisionHistoryEntry, written map[string]string, guardrails string) {
	var packed packedData
	if written != nil && d.hasRoom() {
		var err error
		if packed, err = packData(written); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "pack the data written for the snapshot")
		}
	}
	r.Sections = kube.ShareSections(r.Sections)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropLocked(persona)
	s := deferredStatus{inputs: in, render: r, revision: rev}
	if packed != nil && d.dataBytes+len(packed) <= deferredDataBytes {
		s.written, s.guardrails = packed, guardrails
		d.dataBytes += len(packed)
	}
	d.byPersona[persona] = s
}

// hasRoom reports whether the data held is under deferredDataBytes: past
// it, packing what would not be held is work for nothing.
func (d *deferredStatuses) hasRoom() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dataBytes < deferredDataBytes
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
	d.dataBytes -= len(s.written)
	return s, ok
}

// forgetPersona drops what was recorded for persona.
func (d *deferredStatuses) forgetPersona(persona types.NamespacedName) { d.take(persona) }
