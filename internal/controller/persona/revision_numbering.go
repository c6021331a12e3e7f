package persona

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/version"
)

// revision is the revision a delivery's content is (personas.md#revisions).
type revision struct {
	entry v1alpha1.RevisionHistoryEntry
	// record is the revision.json to write; nil keeps the one the
	// ConfigMap holds.
	record []byte
	// read are the inputs record was encoded from (newRecord); nil when
	// record is a copy (a pin's snapshot's) or nil.
	read []v1alpha1.RevisionInput
}

// newRecord is the revision of entry with its revision.json, rendered
// from read, based on revision base (0 for none).
func newRecord(p *v1alpha1.Persona, e v1alpha1.RevisionHistoryEntry, read []v1alpha1.RevisionInput, base int64) *revision {
	return &revision{entry: e, record: encodeRecord(p, e, read, base), read: read}
}

// kept is what ownWrites keeps of data, written with rev (keptRecord):
// from the inputs rev's revision.json was encoded from when it has them,
// rather than decoded back from the JSON.
func (rev *revision) kept(data map[string]string) *recordedInputs {
	// A record decodeRecord would not read (a revision of 0, from a status
	// edited by hand) is read back as keptRecord reads it.
	if rev.read == nil || rev.entry.Revision <= 0 || len(rev.record) > maxKeptRecordBytes {
		return keptRecord(data)
	}
	return recordedInputsFrom(rev.read)
}

// encodeRecord is the revision.json of entry, rendered from read, based on
// revision base (0 for none).
func encodeRecord(p *v1alpha1.Persona, e v1alpha1.RevisionHistoryEntry, read []v1alpha1.RevisionInput, base int64) []byte {
	rec := delivery.Record{Persona: p.Name, Namespace: p.Namespace, Revision: e.Revision, ContentHash: e.ContentHash,
		RenderedAt: e.Time, Cause: e.Cause, Base: base, Inputs: read, OperatorVersion: version.String()}
	if rec.Inputs == nil {
		rec.Inputs = []v1alpha1.RevisionInput{}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err) // strings and numbers always encode
	}
	return append(b, '\n')
}

// decodeRecord reads revision.json; ok is false when it does not read.
func decodeRecord(text string) (*delivery.Record, bool) {
	var rec delivery.Record
	if text == "" || json.Unmarshal([]byte(text), &rec) != nil || rec.Revision <= 0 {
		return nil, false
	}
	return &rec, true
}

// stamp is the revision of the render attempt delivers into the ConfigMap
// current (nil when there is none yet), whose content hash is currentHash:
//   - the one current holds, when it holds this content;
//   - the latest in status, when it is of this content (a hand edit or a
//     deleted ConfigMap undone);
//   - else a new one, numbered 1 past the highest this Persona's objects
//     know, caused by the input that changed since the previous revision.
//
// A pin's delivery of a snapshot is the snapshot's revision.
func (r *reconciler) stamp(ctx context.Context, p *v1alpha1.Persona, attempt outcome, current *corev1.ConfigMap, currentHash string) (*revision, error) {
	if attempt.pinned != nil {
		return attempt.pinned, nil
	}
	hash := attempt.output.Hash
	if current != nil && currentHash == hash {
		if n := delivery.Revision(current.Annotations); n > 0 {
			if e, ok := p.Status.HistoryEntry(n); ok && e.ContentHash == hash {
				return &revision{entry: e}, nil
			}
			data, err := r.configMapData(ctx, current)
			if err != nil {
				return nil, err
			}
			if rec, ok := decodeRecord(data[render.RevisionKey]); ok && rec.Revision == n && rec.ContentHash == hash {
				return &revision{entry: rec.Entry()}, nil
			}
		}
	}
	// Other content than the live ConfigMap's: not from caches behind it
	// (caches_behind.go). A pin's rebase reads its pinned
	// revision's inputs, older on purpose.
	if attempt.base == nil && current != nil && currentHash != hash && delivery.Controls(p, current) {
		switch behind, err := r.cachesBehind(ctx, current, attempt.read); {
		case err != nil:
			return nil, err
		case behind != nil:
			return nil, behind // Reconcile holds the delivery back
		}
	}
	if e, ok := p.Status.LatestEntry(); ok && e.ContentHash == hash {
		return newRecord(p, e, attempt.read, 0), nil
	}
	return r.newRevision(ctx, p, attempt, current, current)
}

// newRevision is a new revision of attempt's output, numbered 1 past the
// highest p's objects know (current is the live ConfigMap, nil for none),
// caused by the input that changed since the revision previous holds, or
// by the guardrail change of a rebase.
func (r *reconciler) newRevision(ctx context.Context, p *v1alpha1.Persona, attempt outcome, current, previous *corev1.ConfigMap) (*revision, error) {
	n, err := r.highestRevision(ctx, p, current)
	if err != nil {
		return nil, err
	}
	var cause v1alpha1.RevisionInput
	var base int64
	if attempt.base != nil {
		cause, base = attempt.base.cause, attempt.base.revision
	} else if cause, err = r.cause(ctx, p, attempt.read, previous); err != nil {
		return nil, err
	}
	e := v1alpha1.RevisionHistoryEntry{Revision: n + 1, ContentHash: attempt.output.Hash, Time: metav1.Now().Rfc3339Copy(), Cause: cause}
	return newRecord(p, e, attempt.read, base), nil
}

// highestRevision is the highest revision number this Persona's own
// objects know: its live ConfigMap, its status and its snapshots.
func (r *reconciler) highestRevision(ctx context.Context, p *v1alpha1.Persona, current *corev1.ConfigMap) (int64, error) {
	n := max(p.Status.CurrentRevision, p.Status.LatestRevision)
	for _, e := range p.Status.History {
		n = max(n, e.Revision)
	}
	if current != nil && delivery.Controls(p, current) {
		n = max(n, delivery.Revision(current.Annotations))
	}
	snapshots, err := r.revisions.Snapshots(ctx, p)
	if err != nil {
		return 0, err
	}
	for _, s := range snapshots {
		n = max(n, s.Number)
	}
	return n, nil
}

// cause is the input whose change makes a new revision: the first of read
// that the previous revision (the revision.json current holds) did not read
// at this version, the Persona itself first; else the first input that
// revision read and this render did not; else the operator. A first
// revision is the Persona's, unless its ConfigMap was there before: then
// the operator's.
func (r *reconciler) cause(ctx context.Context, p *v1alpha1.Persona, read []v1alpha1.RevisionInput, current *corev1.ConfigMap) (v1alpha1.RevisionInput, error) {
	operator := v1alpha1.RevisionInput{Kind: v1alpha1.RevisionCauseOperator}
	self := inputOf(p)
	self.Kind = v1alpha1.PersonaKind
	if current == nil {
		return self, nil
	}
	if !delivery.Controls(p, current) {
		return operator, nil
	}
	previous, err := r.recordOf(ctx, current)
	if err != nil {
		return v1alpha1.RevisionInput{}, err
	}
	if !previous.readable {
		return operator, nil
	}
	before := previous.values()
	if !slices.Contains(before, self) {
		return self, nil
	}
	for _, in := range read {
		if !slices.Contains(before, in) {
			return in, nil
		}
	}
	for _, in := range before {
		if !slices.Contains(read, in) {
			return in, nil
		}
	}
	return operator, nil
}

// recordOf is what the revision.json of the ConfigMap current names: as
// known at its version when the controller wrote or read it there, else
// read from its data.
func (r *reconciler) recordOf(ctx context.Context, current *corev1.ConfigMap) (*recordedInputs, error) {
	if current.Data == nil {
		if known, ok := r.writes.recordAt(client.ObjectKeyFromObject(current), current.ResourceVersion); ok {
			return known, nil
		}
	}
	data, err := r.configMapData(ctx, current)
	if err != nil {
		return nil, err
	}
	return recordedInputsOf(data), nil
}

// setRevision makes the status name e as the delivered and latest
// revision, and keeps it in the history's last MaxStatusHistory.
func setRevision(st *v1alpha1.PersonaStatus, e v1alpha1.RevisionHistoryEntry) {
	st.CurrentRevision, st.LatestRevision = e.Revision, e.Revision
	addHistory(st, e)
}

// addHistory keeps e in the history's last MaxStatusHistory.
func addHistory(st *v1alpha1.PersonaStatus, e v1alpha1.RevisionHistoryEntry) {
	if _, ok := st.HistoryEntry(e.Revision); ok {
		return
	}
	st.History = append(slices.Clone(st.History), e)
	slices.SortFunc(st.History, func(a, b v1alpha1.RevisionHistoryEntry) int { return int(a.Revision - b.Revision) })
	if over := len(st.History) - v1alpha1.MaxStatusHistory; over > 0 {
		st.History = st.History[over:]
	}
}

// applyRevision sets rev on the desired ConfigMap: its annotation, and its
// revision.json unless it keeps the one current holds (read from current).
func (r *reconciler) applyRevision(ctx context.Context, rev *revision, desired, current *corev1.ConfigMap) error {
	desired.Annotations[delivery.RevisionAnnotation] = strconv.FormatInt(rev.entry.Revision, 10)
	if rev.record != nil {
		desired.Data[render.RevisionKey] = string(rev.record)
		return nil
	}
	data, err := r.configMapData(ctx, current)
	if err != nil {
		return err
	}
	desired.Data[render.RevisionKey] = data[render.RevisionKey]
	return nil
}
