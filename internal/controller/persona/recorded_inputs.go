package persona

import (
	"unique"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// recordedInputs are the inputs the revision.json of a ConfigMap's data
// names, which the next revision's cause is found against
// (revision_numbering.go). They are kept with what ownWrites knows of the
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
	return recordedInputsFrom(rec.Inputs)
}

// recordedInputsFrom are the inputs of a revision.json that reads.
func recordedInputsFrom(inputs []v1alpha1.RevisionInput) *recordedInputs {
	out := &recordedInputs{readable: true, inputs: make([]unique.Handle[v1alpha1.RevisionInput], len(inputs))}
	for i, in := range inputs {
		out.inputs[i] = unique.Make(in)
	}
	return out
}

// maxKeptRecordBytes bounds the revision.json whose inputs ownWrites keeps:
// a Persona's own renders name a few dozen inputs in a few KiB, while one
// written by someone else may fill most of a ConfigMap, and is then read
// again when needed rather than held.
const maxKeptRecordBytes = 16 << 10

// keptRecord is the record of data for ownWrites to keep, nil when there is
// no data or its revision.json is over maxKeptRecordBytes.
func keptRecord(data map[string]string) *recordedInputs {
	if data == nil || len(data[render.RevisionKey]) > maxKeptRecordBytes {
		return nil
	}
	return recordedInputsOf(data)
}

// values are the inputs, in the record's order.
func (r *recordedInputs) values() []v1alpha1.RevisionInput {
	out := make([]v1alpha1.RevisionInput, len(r.inputs))
	for i, h := range r.inputs {
		out[i] = h.Value()
	}
	return out
}
