package persona

import (
	"cmp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/status"
)

// report sets the status and emits Events for what changed (personas.md#conditions),
// and returns when the Persona must be reconciled again by itself: a render
// out of wall time is retried, an awaited reference becomes stalled. A
// failure keeps the last good render's fields: the ConfigMap still holds it.
func (r *reconciler) report(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, attempt outcome, own bool) time.Duration {
	st := &p.Status
	st.ObservedGeneration = p.Generation
	if attempt.revision != nil {
		setRevision(st, *attempt.revision)
	}
	previous := meta.FindStatusCondition(before.Conditions, v1alpha1.ReadyCondition)
	if attempt.reason == v1alpha1.RenderedReason {
		r.guardrailsHeld(p)
		status.SetRendered(p, attempt.render)
		// One Event per change of the ConfigMap's content that is the
		// Persona's own news: a reconcile that read a stale Persona from
		// the cache writes nothing and tells nothing, and a change another
		// object caused is told on that object (Propagated). The note also
		// says what the render changed, so that kubectl describe persona
		// answers what an edit did. A write comes from a render's output.
		if own && attempt.wrote && before.ContentHash != attempt.render.Hash {
			out := attempt.output
			change := promptdiff.Changes(attempt.previous, before.Sections, out)
			r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "%s: %s", status.RenderedNote(p, out), change)
		}
		return 0
	}
	renderFailures.WithLabelValues(attempt.reason).Inc()
	if attempt.output != nil {
		// The guardrails were delivered all the same: the status tells
		// what the ConfigMap now holds.
		status.SetDelivered(p, attempt.render)
	}
	f := status.Failure{Reason: attempt.reason, Message: attempt.message, Retrying: attempt.retryAfter > 0}
	now := time.Now()
	awaitFor := status.MarkFailed(&st.Conditions, p.Generation, f, now, r.gracePeriod())
	if attempt.reason == v1alpha1.ConfigMapConflictReason {
		awaitFor = conflictRecheck(st.Conditions, now)
	}
	// The condition holds the message cut: so is it compared.
	if previous == nil || previous.Reason != attempt.reason || previous.Message != status.Cut(attempt.message, status.MaxConditionMessage) {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, attempt.reason, "Render", "%s", attempt.message)
	}
	return max(attempt.retryAfter, awaitFor)
}

func (r *reconciler) gracePeriod() time.Duration {
	return cmp.Or(r.ReferenceGracePeriod, status.DefaultReferenceGracePeriod)
}

// A foreign persona-<name> that lacks the operator's label is in neither
// ConfigMap watch, so its deletion brings no event: a Persona in
// ConfigMapConflict looks again by itself, soon at first, then less often,
// so that many long conflicts cost few reads.
const (
	minConflictRecheck = time.Second
	maxConflictRecheck = 5 * time.Minute
)

// conflictRecheck is when a Persona in ConfigMapConflict since its Ready
// condition's lastTransitionTime looks again: a quarter of the time it has
// been in conflict, within [minConflictRecheck, maxConflictRecheck].
func conflictRecheck(conds []metav1.Condition, now time.Time) time.Duration {
	var since time.Duration
	if ready := meta.FindStatusCondition(conds, v1alpha1.ReadyCondition); ready != nil {
		since = now.Sub(ready.LastTransitionTime.Time)
	}
	return min(max(since/4, minConflictRecheck), maxConflictRecheck)
}
