package persona

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/release"
	"github.com/persona-operator/persona-operator/internal/status"
)

// A Persona with spec.rollout (personas.md#prompt-releases) releases each
// new revision as a canary: the live ConfigMap keeps the stable revision
// (status.currentRevision), as under a pin, while the latest render is
// numbered and snapshotted as status.latestRevision and the injection gives
// it to a share of new pods; release.Advance moves it through the steps,
// and promotion delivers it. A revision a guardrail change caused never
// waits: without a canary it is delivered at once; during one, the stable
// revision is re-rendered with the new guardrails and the canary's
// revision replaced by the latest render, keeping its step.

// isGuardrailCause reports whether a revision of cause in is a guardrail
// change: a ClusterPromptLayer's, or the labels of the Namespace that
// select them.
func isGuardrailCause(in v1alpha1.RevisionInput) bool {
	return in.Kind == v1alpha1.ClusterPromptLayerKind || in.Kind == v1alpha1.NamespaceKind
}

// reconcileCanary delivers p under its rollout, when the render attempt
// is another revision than the stable one; done is false when the attempt
// is to be delivered as without a rollout: it holds the stable content, it
// is a guardrail change without a canary, it failed, the canary was just
// promoted, or the stable revision cannot be held.
func (r *reconciler) reconcileCanary(ctx context.Context, p *v1alpha1.Persona, attempt outcome) (_ ctrl.Result, done bool, _ error) {
	stable := p.Status.CurrentRevision
	if stable == 0 || attempt.reason != v1alpha1.RenderedReason || attempt.output == nil {
		return ctrl.Result{}, false, nil
	}
	if attempt.output.Hash == p.Status.ContentHash {
		// The stable content again: a canary of other content is over.
		r.endCanary(ctx, p, "the latest render is the stable revision again")
		return ctrl.Result{}, false, nil
	}
	src, err := r.pinnedSource(ctx, p, stable)
	if err != nil || src == nil {
		if err == nil {
			r.endCanary(ctx, p, fmt.Sprintf("the stable revision %d has no snapshot: the latest render is delivered", stable))
		}
		return ctrl.Result{}, err != nil, err
	}
	latestFailure, err := r.numberLatest(ctx, p, attempt, nil)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	latest, _ := p.Status.LatestEntry()
	c := p.Status.Canary
	switch {
	case c == nil && isGuardrailCause(latest.Cause):
		return ctrl.Result{}, false, nil // guardrails never wait
	case c == nil:
		started := release.Start(latest.Revision, time.Now())
		c = &started
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.CanaryStartedReason, "Release",
			"revision %d is a canary of stable revision %d, by spec.rollout's %d steps", latest.Revision, stable, len(p.Spec.Rollout.Steps))
	case c.Revision != latest.Revision && isGuardrailCause(latest.Cause):
		// The canary's inputs with the new guardrails: it keeps its step.
		replaced := *c
		replaced.Revision = latest.Revision
		c = &replaced
	case c.Revision != latest.Revision:
		if err := r.terminateRun(ctx, p, c.AnalysisRun); err != nil {
			return ctrl.Result{}, true, err
		}
		started := release.Start(latest.Revision, time.Now())
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.CanaryStartedReason, "Release",
			"revision %d replaces the canary of revision %d, from step 0", latest.Revision, c.Revision)
		c = &started
	}
	analysis := r.analysisOf(ctx, p, c.AnalysisRun)
	d := release.Advance(release.Input{Persona: p.Name, Steps: p.Spec.Rollout.Steps, Canary: *c, Now: time.Now(),
		Promote: p.Annotations[v1alpha1.PromoteAnnotation], Abort: p.Annotations[v1alpha1.AbortAnnotation],
		Analysis: analysis})
	if err := r.terminateRun(ctx, p, d.Terminate); err != nil {
		return ctrl.Result{}, true, err
	}
	if d.Run != nil && (d.Run.Name != c.AnalysisRun || analysis == release.Analysis{}) {
		// The step's run is not there yet: make it.
		if missing := r.startRun(ctx, p, d.Run, stable, d.Canary.Revision); missing != "" {
			d.Canary.Message = missing
		}
	}
	if d.Promoted {
		p.Status.Canary = nil
		setRelease(&p.Status, d.Canary.Revision, "Promoted", d.Why)
		meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.CanaryCondition)
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.RolloutPromotedReason, "Release",
			"revision %d %s; it replaces stable revision %d", d.Canary.Revision, d.Why, stable)
		return ctrl.Result{}, false, nil
	}
	pn := pin{revision: stable}
	delivered, err := r.deliverHeld(ctx, p, &pn, src, attempt)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if pn.failure != "" {
		r.endCanary(ctx, p, fmt.Sprintf("the stable revision cannot be delivered (%s): the latest render is delivered", pn.message))
		return ctrl.Result{}, false, nil
	}
	p.Status.Canary = &d.Canary
	outcome := "Canary"
	if d.Aborted {
		outcome = "Aborted"
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, v1alpha1.RolloutAbortedReason, "Release",
			"the canary of revision %d was aborted: %s; new pods get stable revision %d", d.Canary.Revision, d.Why, stable)
	}
	setRelease(&p.Status, d.Canary.Revision, outcome, d.Canary.Message)
	r.reportCanary(p, delivered)
	retryAfter, err := r.keepSnapshot(ctx, p, delivered, attempt.retryAfter)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if latestFailure != nil && meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SnapshotFailedCondition) == nil {
		r.setSnapshotFailed(p, latestFailure)
		retryAfter = min(max(retryAfter, snapshotRetry), snapshotRetry)
	}
	if d.Run != nil {
		// The step waits for its run, which is read again in a while.
		d.RequeueAfter = analysisPoll
	}
	if d.RequeueAfter > 0 && (retryAfter == 0 || d.RequeueAfter < retryAfter) {
		retryAfter = d.RequeueAfter
	}
	return ctrl.Result{RequeueAfter: retryAfter}, true, nil
}

// endCanary ends p's canary, when it has one, without promoting it, and
// stops its AnalysisRun.
func (r *reconciler) endCanary(ctx context.Context, p *v1alpha1.Persona, why string) {
	if p.Status.Canary == nil {
		return
	}
	if err := r.terminateRun(ctx, p, p.Status.Canary.AnalysisRun); err != nil {
		// Its result is never read again: only Argo Rollouts' work goes on.
		log.FromContext(ctx).Error(err, "the canary ended; its AnalysisRun goes on")
	}
	if p.Status.Canary.Phase != v1alpha1.CanaryAborted {
		setRelease(&p.Status, p.Status.Canary.Revision, "Aborted", why)
	}
	p.Status.Canary = nil
	meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.CanaryCondition)
}

// setRelease records what became of revision n as a canary in its history
// entry, while the history holds it.
func setRelease(st *v1alpha1.PersonaStatus, n int64, outcome, message string) {
	i := slices.IndexFunc(st.History, func(e v1alpha1.RevisionHistoryEntry) bool { return e.Revision == n })
	if i < 0 {
		return
	}
	st.History = slices.Clone(st.History)
	st.History[i].Release = &v1alpha1.RevisionRelease{Outcome: outcome, Message: status.Cut(message, maxReleaseMessage)}
}

// maxReleaseMessage bounds a history entry's release message, as the CRD does.
const maxReleaseMessage = 1024

// reportCanary sets the status of a Persona whose canary runs: the stable
// revision delivered, Ready=True, and the Canary condition with the
// canary's phase.
func (r *reconciler) reportCanary(p *v1alpha1.Persona, delivered outcome) {
	st := &p.Status
	st.ObservedGeneration = p.Generation
	if delivered.revision != nil {
		addHistory(st, *delivered.revision)
		st.CurrentRevision = delivered.revision.Revision
	}
	status.SetDelivered(p, delivered.render)
	c := st.Canary
	note := fmt.Sprintf("canary revision %d at %d%% of new pods, step %d of %d", c.Revision, c.Weight, c.Step, len(p.Spec.Rollout.Steps))
	if c.Phase == v1alpha1.CanaryAborted {
		note = fmt.Sprintf("the canary of revision %d was aborted", c.Revision)
	}
	status.MarkReady(&st.Conditions, p.Generation, v1alpha1.RenderedReason,
		fmt.Sprintf("ConfigMap %s holds stable revision %d; %s", delivery.ConfigMapName(p.Name), st.CurrentRevision, note))
	cond := metav1.Condition{Type: v1alpha1.CanaryCondition, Status: metav1.ConditionTrue, Reason: string(c.Phase),
		Message: status.Cut(note+canaryDetail(c), status.MaxConditionMessage), ObservedGeneration: p.Generation}
	if c.Phase == v1alpha1.CanaryAborted {
		cond.Status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&st.Conditions, cond)
}

func canaryDetail(c *v1alpha1.CanaryStatus) string {
	if c.Message == "" {
		return ""
	}
	return ": " + c.Message
}

// releaseCommanded lets through an update that changes a Persona's promote
// or abort annotation, which changes no generation.
var releaseCommanded = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		for _, k := range []string{v1alpha1.PromoteAnnotation, v1alpha1.AbortAnnotation} {
			if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
				return true
			}
		}
		return false
	},
}
