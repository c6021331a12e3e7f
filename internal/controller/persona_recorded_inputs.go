package controller

import (
	"unique"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// recordedInputs are the inputs the revision.json of a ConfigMap's data
// names, which the next revision's cause is found against
// (persona_revision.go). They are kept with what ownWrites knows of the
// ConfigMap, so that a delivery need not read the data back; interned, an
// input that many Personas read (a layer, a guardrail) is held once, and
// each Persona pays a word per input.
type recordedInputs struct {
	// readable is false when the data holds no revision.json that reads.
	readable bool
	inputs   []unique.Handle[v1alpha1.RevisionInput]
}

// recordedInputsOf are the inputs the revision.json of data names.
func recordedInputsOf(data map[string]string) *recordedInputs {
	rec, ok := decodeRecord(data[render.RevisionKey])
	if !ok {
		return &recordedInputs{}
	}
	out := &recordedInputs{readable: true, inputs: make([]unique.Handle[v1alpha1.RevisionInput], len(rec.Inputs))}
	for i, in := range rec.Inputs {
		out.inputs[i] = unique.Make(in)
	}
	return out
}

// values are the inputs, in the record's order.
func (r *recordedInputs) values() []v1alpha1.RevisionInput {
	out := make([]v1alpha1.RevisionInput, len(r.inputs))
	for i, h := range r.inputs {
		out[i] = h.Value()
	}
	return out
}
