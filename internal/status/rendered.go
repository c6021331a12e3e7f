package status

import (
	"fmt"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// Render is what a Persona's status tells of a render: its content hash,
// its size and the provenance of each piece of the system prompt.
type Render struct {
	Hash     string
	Bytes    int
	Sections []v1alpha1.RenderedSection
}

// RenderOf is what the status tells of out.
func RenderOf(out *render.Output) Render {
	return Render{Hash: out.Hash, Bytes: out.Bytes, Sections: provenance(out.Pieces)}
}

// SetRendered sets p's status for a render its ConfigMap holds (personas.md#writing-a-persona-spec,
// personas.md#conditions): the ConfigMap's name, hash and size, the provenance of each piece,
// Ready=True for p's generation, neither Reconciling nor Stalled.
func SetRendered(p *v1alpha1.Persona, r Render) {
	SetDelivered(p, r)
	st := &p.Status
	MarkReady(&st.Conditions, p.Generation, v1alpha1.RenderedReason,
		fmt.Sprintf("ConfigMap %s holds the render: %d bytes, %s", st.ConfigMapName, r.Bytes, r.Hash))
}

// SetDelivered sets p's fields of the render its ConfigMap holds, and
// leaves the conditions alone: a failed render whose guardrails were
// delivered all the same (clusterpromptlayers.md#kept-through-failures)
// reports what was delivered.
func SetDelivered(p *v1alpha1.Persona, r Render) {
	st := &p.Status
	st.ConfigMapName = delivery.ConfigMapName(p.Name)
	st.ContentHash = r.Hash
	st.RenderedBytes = int64(r.Bytes)
	st.Sections = r.Sections
}

// RenderedNote is the note of the Normal Rendered Event for p's render out.
func RenderedNote(p *v1alpha1.Persona, out *render.Output) string {
	return fmt.Sprintf("rendered %s (%d bytes) into ConfigMap %s", out.Hash, out.Bytes, delivery.ConfigMapName(p.Name))
}

func provenance(pieces []render.Piece) []v1alpha1.RenderedSection {
	out := make([]v1alpha1.RenderedSection, len(pieces))
	for i, pc := range pieces {
		out[i] = v1alpha1.RenderedSection{Name: pc.Name, Origin: pc.Origin, Bytes: int64(len(pc.Text))}
	}
	return out
}
