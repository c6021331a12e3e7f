package persona

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// A pin (personas.md#pinning) delivers an earlier revision in the live
// ConfigMap while renders go on: the latest render is numbered and
// snapshotted as status.latestRevision, not delivered. Pinning and
// unpinning make no revision; a pinned revision whose guardrails are no
// longer the current ones is re-rendered with them, and that is one.

// pin is what a Persona's pin-revision annotation asks for.
type pin struct {
	// revision is the revision pinned, 0 without a pin or with one that
	// does not parse.
	revision int64
	// set is whether the annotation is there.
	set bool
	// failure is why the pin is not honoured: InvalidPin, RevisionNotFound,
	// or the reason a re-render with the current guardrails failed.
	failure, message string
	// retryAfter is set when that re-render ran out of the time the latest
	// render left it: the pin is tried again by itself.
	retryAfter time.Duration
}

func pinOf(p *v1alpha1.Persona) pin {
	n, set, err := v1alpha1.PinnedRevisionOf(p.Annotations)
	if err != nil {
		return pin{set: true, failure: v1alpha1.InvalidPinReason,
			message: fmt.Sprintf("annotation %s: %v; the latest render is delivered", v1alpha1.PinRevisionAnnotation, err)}
	}
	return pin{revision: n, set: set}
}

// pinnedSource is the ConfigMap that holds revision n: its snapshot or,
// when that is gone, the live ConfigMap while it still delivers n (the
// snapshot is then written again from it). nil when neither does.
func (r *reconciler) pinnedSource(ctx context.Context, p *v1alpha1.Persona, n int64) (*corev1.ConfigMap, error) {
	var snap corev1.ConfigMap
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, n)}, &snap); {
	case err == nil && delivery.IsSnapshotOf(p, &snap, n):
		return &snap, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get snapshot %s: %w", delivery.SnapshotName(p.Name, n), err)
	}
	live, _, err := r.readConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get ConfigMap %s: %w", delivery.ConfigMapName(p.Name), err)
	}
	if delivery.Controls(p, live) && delivery.Revision(live.Annotations) == n {
		return live, nil
	}
	return nil, nil
}

// deliverPinned delivers revision n, held by src, and numbers the latest
// render attempt as the latest revision without delivering it. It returns
// the delivery's outcome, the latest revision (nil when the render failed)
// and a snapshot failure of the latest revision's. pn.failure is set
// instead when the pinned revision cannot be delivered.
func (r *reconciler) deliverPinned(ctx context.Context, p *v1alpha1.Persona, pn *pin, src *corev1.ConfigMap, attempt outcome) (outcome, *revisions.Failure, error) {
	latestFailure, err := r.numberLatest(ctx, p, attempt, nil)
	if err != nil {
		return outcome{}, nil, err
	}
	delivered, err := r.deliverHeld(ctx, p, pn, src, attempt)
	return delivered, latestFailure, err
}

// numberLatest numbers the render attempt, when it rendered, as p's latest
// revision without delivering it, and keeps its snapshot (keepLatest);
// base, when set, is the revision it replaces, re-rendered with the current
// guardrails. It returns the snapshot's failure.
func (r *reconciler) numberLatest(ctx context.Context, p *v1alpha1.Persona, attempt outcome, base *rebase) (*revisions.Failure, error) {
	if attempt.reason != v1alpha1.RenderedReason {
		return nil, nil
	}
	attempt.base = base
	latest, failure, err := r.keepLatest(ctx, p, attempt)
	if err != nil {
		return nil, err
	}
	addHistory(&p.Status, latest)
	p.Status.LatestRevision = latest.Revision
	return failure, nil
}

// deliverHeld delivers revision pn.revision, held by src, in the live
// ConfigMap: as it is, or re-rendered with the current guardrails when they
// changed since (a new revision based on it). pn.failure is set instead
// when it cannot be.
func (r *reconciler) deliverHeld(ctx context.Context, p *v1alpha1.Persona, pn *pin, src *corev1.ConfigMap, attempt outcome) (outcome, error) {
	guardrails, err := resolve.Guardrails(ctx, kube.Lookup{Cached: r.Client, Sources: r.configMaps}, p)
	if err != nil {
		return outcome{}, fmt.Errorf("resolve the guardrails of persona %s: %w", p.Name, err)
	}
	identity := resolve.GuardrailsIdentity(guardrails)
	data := withoutRevisionKey(src.Data)
	rec, _ := decodeRecord(src.Data[render.RevisionKey])
	if why := unfaithful(p, pn.revision, src, data, rec); why != "" {
		pn.failure, pn.message = v1alpha1.RevisionNotFoundReason, fmt.Sprintf("revision %d: ConfigMap %s %s; the latest render is delivered", pn.revision, src.Name, why)
		return outcome{}, nil
	}
	pinned := outcome{reason: v1alpha1.RenderedReason, read: attempt.read, guardrails: identity}
	if live, ok := r.rebasedLive(ctx, p, pn.revision, identity); ok {
		// Delivered already, re-rendered with these guardrails: as it is, not rendered again.
		pinned.output, pinned.render, pinned.pinned = live.output, live.render, live.pinned
	} else if src.Annotations[delivery.GuardrailsAnnotation] == identity && rec != nil {
		// The snapshot's content, byte for byte, and its revision.json.
		out := &render.Output{Data: data, Hash: render.ContentHash(data), Bytes: delivery.DataSize(data)}
		pinned.output, pinned.render = out, status.Render{Hash: out.Hash, Bytes: out.Bytes}
		pinned.pinned = &revision{entry: rec.Entry(), record: []byte(src.Data[render.RevisionKey])}
	} else {
		// n's inputs with the current guardrails: a new revision based on n.
		bundle, err := render.UnmarshalBundle([]byte(data[render.BundleKey]))
		if err != nil {
			pn.failure, pn.message = v1alpha1.RevisionNotFoundReason, fmt.Sprintf("revision %d holds no bundle.json that reads: %v; the latest render is delivered", pn.revision, err)
			return outcome{}, nil
		}
		bundle.ClusterLayers = resolve.Layers(guardrails)
		// Charged to what the latest render left of the Persona's budget.
		out, err := r.renderIn(ctx, false, bundle, attempt.budgetEnd)
		if err != nil {
			pn.failure, pn.message = status.RenderReason(err), fmt.Sprintf("revision %d with the current ClusterPromptLayers does not render: %v; the latest render is delivered", pn.revision, err)
			// Out of what the latest render left, the time may be there next time.
			var limit *render.LimitError
			if errors.As(err, &limit) && (limit.Limit == render.LimitTime || limit.Limit == render.LimitPersonaTime) {
				pn.retryAfter = overrunRetry
			}
			return outcome{}, nil
		}
		pinned.output, pinned.render = out, status.RenderOf(out)
		pinned.read = rebasedInputs(recordInputs(rec), attempt.read)
		pinned.base = &rebase{revision: pn.revision, cause: guardrailChange(recordInputs(rec), attempt.read)}
	}
	return r.deliver(ctx, p, pinned, false)
}

// rebasedLive is the delivery of p's live ConfigMap when it holds the
// revision based on n, re-rendered with the guardrails of identity, as the
// operator wrote it (the status's delivered revision): a pin delivers it as
// it is rather than render n's inputs again at every reconcile.
func (r *reconciler) rebasedLive(ctx context.Context, p *v1alpha1.Persona, n int64, identity string) (outcome, bool) {
	if p.Status.PinnedRevision != n || p.Status.CurrentRevision == n {
		return outcome{}, false
	}
	live, _, err := r.readConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
	if err != nil || !delivery.Controls(p, live) || live.Annotations[delivery.GuardrailsAnnotation] != identity ||
		delivery.Revision(live.Annotations) != p.Status.CurrentRevision {
		return outcome{}, false
	}
	rec, ok := decodeRecord(live.Data[render.RevisionKey])
	data := withoutRevisionKey(live.Data)
	if !ok || rec.Base != n || unfaithful(p, p.Status.CurrentRevision, live, data, rec) != "" {
		return outcome{}, false
	}
	out := &render.Output{Data: data, Hash: render.ContentHash(data), Bytes: delivery.DataSize(data)}
	delivered := status.Render{Hash: out.Hash, Bytes: out.Bytes}
	if p.Status.ContentHash == out.Hash {
		delivered.Sections = p.Status.Sections // what the render that wrote it told
	}
	return outcome{output: out, render: delivered,
		pinned: &revision{entry: rec.Entry(), record: []byte(live.Data[render.RevisionKey])}}, true
}

// unfaithful says why src does not hold revision n as the operator wrote
// it, "" when it does: its data (less revision.json) must have the content
// hash its annotation names, which its revision.json and p's history, where
// they name revision n, name too.
func unfaithful(p *v1alpha1.Persona, n int64, src *corev1.ConfigMap, data map[string]string, rec *delivery.Record) string {
	hash := render.ContentHash(data)
	if annotated := src.Annotations[delivery.ContentHashAnnotation]; annotated != hash {
		return fmt.Sprintf("holds data of content hash %s, not the %q its annotation %s names", hash, annotated, delivery.ContentHashAnnotation)
	}
	if rec != nil && (rec.Revision != n || rec.ContentHash != hash) {
		return fmt.Sprintf("holds a revision.json of revision %d, content hash %s, not of revision %d, %s", rec.Revision, rec.ContentHash, n, hash)
	}
	if e, ok := p.Status.HistoryEntry(n); ok && e.ContentHash != hash {
		return fmt.Sprintf("holds data of content hash %s, not the %s status.history names for it", hash, e.ContentHash)
	}
	return ""
}

// rebase is what a revision re-rendered from another's inputs records.
type rebase struct {
	revision int64
	cause    v1alpha1.RevisionInput
}

// keepLatest numbers the latest render of a pinned Persona: the status's
// latest revision while it is of this content, else the newest snapshot's
// when it is (written before a restart lost the status), else a new one.
// Its snapshot is written, for it to be inspected before the pin goes.
func (r *reconciler) keepLatest(ctx context.Context, p *v1alpha1.Persona, attempt outcome) (v1alpha1.RevisionHistoryEntry, *revisions.Failure, error) {
	out := attempt.output
	if out == nil { // a fan-out's status pass: the delivery was numbered
		return *attempt.revision, nil, nil
	}
	var rev *revision
	if e, ok := p.Status.LatestEntry(); ok && e.ContentHash == out.Hash {
		rev = newRecord(p, e, attempt.read, 0)
	} else {
		snapshots, err := r.revisions.Snapshots(ctx, p)
		if err != nil {
			return v1alpha1.RevisionHistoryEntry{}, nil, err
		}
		var previous *corev1.ConfigMap
		if len(snapshots) > 0 {
			newest := snapshots[len(snapshots)-1]
			if newest.Meta.ContentHash == out.Hash && newest.Number > p.Status.CurrentRevision {
				var cm corev1.ConfigMap
				if err := r.APIReader.Get(ctx, newest.Meta.Key(), &cm); err == nil && delivery.IsSnapshotOf(p, &cm, newest.Number) {
					if rec, ok := decodeRecord(cm.Data[render.RevisionKey]); ok && rec.Revision == newest.Number && rec.ContentHash == out.Hash {
						return rec.Entry(), nil, nil
					}
				}
			}
			if e, ok := p.Status.LatestEntry(); ok {
				previous = &corev1.ConfigMap{}
				if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, e.Revision)}, previous); err != nil || !delivery.IsSnapshotOf(p, previous, e.Revision) {
					previous = nil
				}
			}
		}
		if rev, err = r.newRevision(ctx, p, attempt, nil, previous); err != nil {
			return v1alpha1.RevisionHistoryEntry{}, nil, err
		}
	}
	written := maps.Clone(out.Data)
	written[render.RevisionKey] = string(rev.record)
	failure, err := r.revisions.Keep(ctx, p, rev.entry, revisions.Content{Data: written, Guardrails: attempt.guardrails, Live: r.liveConfigMap(p)})
	return rev.entry, failure, err
}

// withoutRevisionKey is data without revision.json.
func withoutRevisionKey(data map[string]string) map[string]string {
	out := maps.Clone(data)
	delete(out, render.RevisionKey)
	return out
}

func recordInputs(rec *delivery.Record) []v1alpha1.RevisionInput {
	if rec == nil {
		return nil
	}
	return rec.Inputs
}

func isGuardrail(in v1alpha1.RevisionInput) bool { return in.Kind == v1alpha1.ClusterPromptLayerKind }

// rebasedInputs are the inputs of a revision's inputs re-rendered with the
// guardrails current read: its own, less its ClusterPromptLayers, and the
// current ones.
func rebasedInputs(base, current []v1alpha1.RevisionInput) []v1alpha1.RevisionInput {
	out := slices.DeleteFunc(slices.Clone(base), isGuardrail)
	for _, in := range current {
		if isGuardrail(in) {
			out = append(out, in)
		}
	}
	return out
}

// guardrailChange is the cause of a rebase: the first ClusterPromptLayer
// that current read and base did not, else the first base read and current
// did not, else the operator (the same layers, another template).
func guardrailChange(base, current []v1alpha1.RevisionInput) v1alpha1.RevisionInput {
	for _, in := range current {
		if isGuardrail(in) && !slices.Contains(base, in) {
			return in
		}
	}
	for _, in := range base {
		if isGuardrail(in) && !slices.Contains(current, in) {
			return in
		}
	}
	return v1alpha1.RevisionInput{Kind: v1alpha1.RevisionCauseOperator}
}

// reportPinned sets the status of a Persona whose pin is honoured: the
// delivered revision, Pinned=True and Ready=True with reason Pinned, whose
// message tells the latest revision and whether the latest render
// succeeded (latest, the render attempt).
func (r *reconciler) reportPinned(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, pn pin, delivered, latest outcome) {
	st := &p.Status
	st.ObservedGeneration = p.Generation
	if delivered.revision != nil {
		addHistory(st, *delivered.revision)
		st.CurrentRevision = delivered.revision.Revision
	}
	status.SetDelivered(p, delivered.render)
	st.PinnedRevision = pn.revision
	what := fmt.Sprintf("revision %d", pn.revision)
	if st.CurrentRevision != pn.revision {
		what = fmt.Sprintf("revision %d (revision %d re-rendered with the current ClusterPromptLayers)", st.CurrentRevision, pn.revision)
	}
	latestNote := fmt.Sprintf("the latest revision is %d, which renders", st.LatestRevision)
	if latest.reason != v1alpha1.RenderedReason {
		latestNote = fmt.Sprintf("the latest revision is %d; the latest render fails (%s: %s)", st.LatestRevision, latest.reason, latest.message)
	}
	// The latest render's failure may quote a template at length: cut as a failure's condition is.
	status.MarkReady(&st.Conditions, p.Generation, v1alpha1.PinnedReason, status.Cut(
		fmt.Sprintf("pinned to revision %d: ConfigMap %s holds %s; %s", pn.revision, delivery.ConfigMapName(p.Name), what, latestNote), status.MaxConditionMessage))
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.PinnedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.PinnedReason, Message: fmt.Sprintf("ConfigMap %s holds %s", delivery.ConfigMapName(p.Name), what), ObservedGeneration: p.Generation})
	if before.PinnedRevision != pn.revision {
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.PinnedReason, "Pin", "pinned to revision %d; the latest revision is %d", pn.revision, st.LatestRevision)
	}
}

// reportUnpinned sets the status of a Persona whose latest render is
// delivered: no Pinned condition without a pin, Pinned=False when one is
// not honoured; an Unpinned Event when a pin that held is gone.
func (r *reconciler) reportUnpinned(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, pn pin) {
	st := &p.Status
	st.PinnedRevision = 0
	if !pn.set {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.PinnedCondition)
		if before.PinnedRevision != 0 {
			r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.UnpinnedReason, "Unpin", "the pin of revision %d was removed; revision %d is delivered", before.PinnedRevision, st.CurrentRevision)
		}
		return
	}
	previous := meta.FindStatusCondition(before.Conditions, v1alpha1.PinnedCondition)
	message := status.Cut(pn.message, status.MaxConditionMessage)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.PinnedCondition, Status: metav1.ConditionFalse,
		Reason: pn.failure, Message: message, ObservedGeneration: p.Generation})
	if previous == nil || previous.Reason != pn.failure || previous.Message != message {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, pn.failure, "Pin", "%s", pn.message)
	}
}

// reconcilePinned delivers the revision pn pins, reports it and keeps its
// snapshot; done is false when the pin cannot be honoured (pn.failure
// says why), for the latest render to be delivered instead.
func (r *reconciler) reconcilePinned(ctx context.Context, p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, pn *pin, attempt outcome) (_ ctrl.Result, done bool, _ error) {
	src, err := r.pinnedSource(ctx, p, pn.revision)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if src == nil {
		pn.failure, pn.message = v1alpha1.RevisionNotFoundReason,
			fmt.Sprintf("revision %d has no snapshot (never kept, or pruned); the latest render is delivered", pn.revision)
		return ctrl.Result{}, false, nil
	}
	delivered, latestFailure, err := r.deliverPinned(ctx, p, pn, src, attempt)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if pn.failure == "" && delivered.reason != v1alpha1.RenderedReason {
		pn.failure, pn.message = delivered.reason, delivered.message
	}
	if pn.failure != "" {
		return ctrl.Result{}, false, nil
	}
	r.reportPinned(p, before, *pn, delivered, attempt)
	retryAfter, err := r.keepSnapshot(ctx, p, delivered, attempt.retryAfter)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if latestFailure != nil && meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SnapshotFailedCondition) == nil {
		r.setSnapshotFailed(p, latestFailure)
		retryAfter = min(cmp.Or(retryAfter, snapshotRetry), snapshotRetry)
	}
	return ctrl.Result{RequeueAfter: retryAfter}, true, nil
}

// pinChanged lets through an update that changes a Persona's pin, which
// changes no generation.
var pinChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[v1alpha1.PinRevisionAnnotation] != e.ObjectNew.GetAnnotations()[v1alpha1.PinRevisionAnnotation] ||
			hasPin(e.ObjectOld) != hasPin(e.ObjectNew)
	},
}

func hasPin(obj client.Object) bool {
	_, ok := obj.GetAnnotations()[v1alpha1.PinRevisionAnnotation]
	return ok
}
